/**
 * A key deleted through the CLI while requests stream fails from the next
 * request on. Runs on every store of this run (test/helpers/stores.ts).
 */
import { expect, it, vi } from "vitest";
import { runAdminCli } from "../helpers/cli.js";
import { validPayment } from "../helpers/fixtures.js";
import { describeEachStore, freshStore, type StoreUnderTest } from "../helpers/stores.js";
import { createTenant, postJson } from "../helpers/test-server.js";
import { BASE_TIMEOUTS, scaled } from "../helpers/timeouts.js";
import { useTestServer } from "../helpers/use-test-server.js";

describeEachStore("key revocation under load", (kind) => {
  let sut: StoreUnderTest;
  const ctx = useTestServer(async () => {
    sut = await freshStore(kind);
    return { store: sut, tenant: false };
  });

  it("answers 401 to every request sent after `key delete` returned, and never 5xx", async () => {
    const tenant = await createTenant(ctx.server);
    const results: { sentAt: number; status: number; message?: string }[] = [];
    let stop = false;
    const stream = async () => {
      let i = 0;
      while (!stop) {
        i += 1;
        const sentAt = performance.now();
        const res = await postJson(
          `${ctx.url}/api/v1/payments`,
          validPayment(`pay_${Math.random().toString(16).slice(2)}_${i}`),
          { key: tenant.key },
        );
        results.push({
          sentAt,
          status: res.status,
          message: (res.body as { error?: { message: string } })?.error?.message,
        });
      }
    };
    const streams = Array.from({ length: 4 }, stream);
    // Counts, not sleeps: on a loaded machine 300 ms may hold no request at all.
    await vi.waitUntil(() => results.filter((r) => r.status === 200).length > 10, {
      timeout: scaled(BASE_TIMEOUTS.childReady),
      interval: 20,
    });
    const cli = await runAdminCli(
      ["key", "delete", "--key", tenant.keyId, "--as", tenant.ownerUserId],
      { STORE_URL: sut.url },
    );
    const deletedAt = performance.now();
    expect(cli.exitCode).toBe(0);
    await vi.waitUntil(() => results.filter((r) => r.sentAt > deletedAt).length > 10, {
      timeout: scaled(BASE_TIMEOUTS.childReady),
      interval: 20,
    });
    stop = true;
    await Promise.all(streams);

    const before = results.filter((r) => r.status === 200);
    const after = results.filter((r) => r.sentAt > deletedAt);
    expect(before.length).toBeGreaterThan(10);
    expect(after.length).toBeGreaterThan(10);
    for (const r of after) {
      expect(r.status).toBe(401);
      expect(r.message).toBe("unknown or revoked API key");
    }
    expect(results.every((r) => r.status === 200 || r.status === 401)).toBe(true);
  });
});
