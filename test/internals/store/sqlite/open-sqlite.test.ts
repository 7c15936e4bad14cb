/** The events table after every migration against the event-field table (a new field needs its migration). */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EVENT_FIELD_TABLE } from "../../../../src/domain/store/event-fields.js";
import { migrate, openSqlite } from "../../../../src/store/sqlite/open-sqlite.js";

const dir = mkdtempSync(join(tmpdir(), "event-columns-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("sqlite events table", () => {
  it("has a column for every field of the event-field table", () => {
    const db = openSqlite(join(dir, "events.db"));
    try {
      migrate(db);
      const columns = (db.prepare("PRAGMA table_info(events)").all() as { name: string }[]).map(
        (c) => c.name,
      );
      expect(columns).toEqual(
        expect.arrayContaining(["site_id", ...EVENT_FIELD_TABLE.map((f) => f.stored)]),
      );
    } finally {
      db.close();
    }
  });
});
