/**
 * The events table after every migration against the event-field table (a new
 * field needs its migration), and the file's incremental auto-vacuum: a new
 * file is made in it, an older one switched at open with its rows kept.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { EVENT_FIELD_TABLE } from "../../../../src/domain/store/event-fields.js";
import {
  migrate,
  openSqlite,
  WAL_SIZE_LIMIT_BYTES,
} from "../../../../src/store/sqlite/open-sqlite.js";

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

describe("sqlite file's auto-vacuum", () => {
  it("makes a new file in incremental mode, with the WAL's size limit", () => {
    const db = openSqlite(join(dir, "new.db"));
    try {
      expect(db.pragma("auto_vacuum", { simple: true })).toBe(2);
      expect(db.pragma("journal_size_limit", { simple: true })).toBe(WAL_SIZE_LIMIT_BYTES);
    } finally {
      db.close();
    }
  });

  it("switches a file made without it at open, keeping every row and dropping its free pages", () => {
    const path = join(dir, "older.db");
    // A file as an older build left it: migrated, no auto-vacuum, pages freed by deletes.
    const older = new Database(path);
    older.pragma("journal_mode = WAL");
    migrate(older);
    const insert = older.prepare(
      "INSERT INTO events (site_id, name, url, ts, received_at, visitor_id, props) VALUES ('s1', 'pageview', 'https://example.com/', ?, ?, 'v', ?)",
    );
    const pad = "x".repeat(1_000);
    older.transaction(() => {
      for (let i = 0; i < 2_000; i++) insert.run(i, i, JSON.stringify({ i, pad }));
    })();
    older.prepare("DELETE FROM events WHERE ts >= 10").run();
    expect(older.pragma("auto_vacuum", { simple: true })).toBe(0);
    expect(older.pragma("freelist_count", { simple: true })).toBeGreaterThan(500);
    older.close();
    const before = statSync(path).size;

    const db = openSqlite(path);
    try {
      expect(db.pragma("auto_vacuum", { simple: true })).toBe(2);
      expect(db.pragma("freelist_count", { simple: true })).toBe(0);
      expect(db.prepare("SELECT ts FROM events ORDER BY ts").pluck().all()).toEqual(
        Array.from({ length: 10 }, (_, i) => i),
      );
      expect(db.pragma("user_version", { simple: true })).toBeGreaterThanOrEqual(20);
      expect(statSync(path).size).toBeLessThan(before / 4);
      expect(statSync(`${path}-wal`).size).toBe(0);
    } finally {
      db.close();
    }
  });
});
