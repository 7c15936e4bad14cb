/** The reports' StoredEvent message against the event-field table it is built from. */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { StoredEventSchema } from "../../../gen/ingest/v1/reports_pb.js";
import { EVENT_FIELD_TABLE } from "../../../src/domain/store/event-fields.js";
import { toStoredEvent } from "../../../src/edge/stored-event.js";

describe("StoredEvent", () => {
  it("has a field for every row of the table, named as it is stored, with the record's name in code", () => {
    for (const f of EVENT_FIELD_TABLE) {
      const field = StoredEventSchema.fields.find((x) => x.name === f.stored);
      expect(field?.localName, f.stored).toBe(f.field);
    }
    // And nothing else but the site.
    expect(StoredEventSchema.fields.map((x) => x.name).sort()).toEqual(
      [...EVENT_FIELD_TABLE.map((f) => f.stored), "site_id"].sort(),
    );
  });

  it("carries every field of a record, times as 64-bit integers, an absent map as empty", () => {
    const message = create(
      StoredEventSchema,
      toStoredEvent({
        siteId: "site_1",
        name: "pageview",
        url: "https://example.com/",
        width: 1280,
        props: { plan: "pro" },
        ts: 1_750_000_000_000,
        receivedAt: 1_750_000_000_001,
        visitorId: "v",
        utmSource: "news",
      }),
    );
    expect(message).toMatchObject({
      siteId: "site_1",
      name: "pageview",
      width: 1280,
      props: { plan: "pro" },
      ts: 1_750_000_000_000n,
      receivedAt: 1_750_000_000_001n,
      utmSource: "news",
      clickIds: {},
    });
    expect(message.referrer).toBeUndefined();
  });
});
