/** The event-field table: the names every store and door derive from it. */
import { describe, expect, it } from "vitest";
import { EVENT_FIELDS } from "../../../../src/domain/events/validate-events.js";
import { EVENT_FIELD_TABLE } from "../../../../src/domain/store/event-fields.js";

describe("event-field table", () => {
  it("stores each field under its record name in snake_case", () => {
    for (const f of EVENT_FIELD_TABLE) {
      expect(f.stored).toBe(f.field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
    }
  });

  it("gives the validation the spec's per-event fields and vid", () => {
    expect([...EVENT_FIELDS].sort()).toEqual(
      ["e", "u", "r", "t", "w", "l", "uid", "p", "ts", "ip", "ua", "vid"].sort(),
    );
  });
});
