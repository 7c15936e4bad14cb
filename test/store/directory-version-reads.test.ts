/**
 * The directory version (src/store/directory-cache.ts) is read once per
 * request, not once per lookup, and a key deleted through another
 * connection is still refused from the very next request while other
 * requests are in flight.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Store } from "../../src/store/port.js";
import { createSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { pageview, sendEvents } from "../helpers/events.js";
import { createTenant } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

let versionReads = 0;
const ctx = useTestServer({
  wrapStore: (store: Store): Store => ({
    ...store,
    directoryVersion() {
      versionReads += 1;
      return store.directoryVersion();
    },
  }),
  tenant: false,
});

describe("the directory version", () => {
  it("is read once for a request's three lookups (key, site, account)", async () => {
    const t = await createTenant(ctx.server);
    // Warm: the records are cached, so only version reads remain.
    expect((await sendEvents(ctx.url, t, pageview(t.siteId))).status).toBe(204);
    for (let i = 0; i < 5; i += 1) {
      const before = versionReads;
      expect((await sendEvents(ctx.url, t, pageview(t.siteId))).status).toBe(204);
      expect(versionReads - before).toBe(1);
    }
  });

  it("a key deleted through another connection is refused by the next request, under load", async () => {
    const t = await createTenant(ctx.server);
    const other = createSqliteStore(join(ctx.server.dir, "ingest.sqlite"));
    try {
      // Requests of another tenant keep the server busy throughout.
      const busy = await createTenant(ctx.server);
      let stop = false;
      const load = Array.from({ length: 8 }, async () => {
        while (!stop) await sendEvents(ctx.url, busy, pageview(busy.siteId));
      });
      for (let i = 0; i < 5; i += 1) {
        expect((await sendEvents(ctx.url, t, pageview(t.siteId))).status).toBe(204);
      }
      expect(await other.deleteKey(t.keyId)).toBe(true);
      const res = await sendEvents(ctx.url, t, pageview(t.siteId));
      stop = true;
      await Promise.all(load);
      expect(res.status).toBe(401);
    } finally {
      await other.close();
    }
  });
});
