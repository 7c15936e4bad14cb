/**
 * The client examples in examples/ run against a live server: they record a
 * payment and a batch of events, retry a 503 after its Retry-After, and stop
 * on 429 without retrying. (Python and Go are not run here: neither is part
 * of the project's toolchain.)
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import type { Store } from "../../src/store/port.js";
import { ROOT } from "../helpers/rpc-clients.js";
import { createTenant, type Tenant } from "../helpers/test-server.js";
import { scaled } from "../helpers/timeouts.js";
import { useTestServer } from "../helpers/use-test-server.js";

const run = promisify(execFile);

const EXAMPLES = {
  "node-connect": [process.execPath, "--import", "tsx", "examples/node-connect/record.ts"],
  "node-fetch": [process.execPath, "examples/node-fetch/record.mjs"],
  curl: ["bash", "examples/curl/record.sh"],
} as const;

describe("client examples", () => {
  const faults = { failPayments: 0, overQuota: false, usageCalls: 0, commits: 0 };

  const ctx = useTestServer({
    wrapStore: (store: Store): Store => ({
      ...store,
      commitPayments: (...a) => {
        faults.commits++;
        if (faults.failPayments > 0) {
          faults.failPayments--;
          return Promise.reject(new Error("database is down"));
        }
        return store.commitPayments(...a);
      },
      getUsage: (...a) => {
        faults.usageCalls++;
        return faults.overQuota ? Promise.resolve(1e12) : store.getUsage(...a);
      },
    }),
  });

  /** Runs an example; resolves with its exit code and output. */
  async function example(name: keyof typeof EXAMPLES, paymentId: string, as: Tenant = ctx.tenant) {
    const [cmd, ...args] = EXAMPLES[name];
    try {
      const { stdout, stderr } = await run(cmd, args, {
        cwd: ROOT,
        timeout: scaled(60_000),
        env: {
          ...process.env,
          INGEST_URL: ctx.url,
          INGEST_KEY: as.key,
          INGEST_SITE: as.siteId,
          INGEST_HOST: "example.com",
          INGEST_PAYMENT_ID: paymentId,
        },
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: e.code ?? -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
    }
  }

  for (const name of Object.keys(EXAMPLES) as (keyof typeof EXAMPLES)[]) {
    it(`${name}: records a payment and a batch of events`, async () => {
      const before = (await ctx.store.listEvents(ctx.siteId, 10_000)).length;
      const id = `pay_ex_${name.replace("-", "_")}`;
      const res = await example(name, id);
      expect(res.stderr).toBe("");
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(
        new RegExp(`^payment ${id} recorded\\n3 events recorded; quota remaining \\d+\\n$`),
      );
      expect(await ctx.store.getPayment(ctx.siteId, id)).toMatchObject({
        amountMinor: 2999,
        currency: "USD",
        customerId: "cus_42",
        kind: "charge",
        metadata: { test: "true" },
      });
      const events = await ctx.store.listEvents(ctx.siteId, 10_000);
      expect(events.length - before).toBe(3);
      expect(events.map((e) => e.name)).toEqual(
        expect.arrayContaining(["pageview", "signup", "$identify"]),
      );
    });

    it(`${name}: retries a 503 after Retry-After and the payment is stored once`, async () => {
      faults.failPayments = 1;
      faults.commits = 0;
      const id = `pay_retry_${name.replace("-", "_")}`;
      const started = performance.now();
      const res = await example(name, id);
      expect(res.code).toBe(0);
      expect(res.stderr).toMatch(/unavailable/);
      expect(res.stderr).toMatch(/retrying/);
      // The server said Retry-After: 2.
      expect(performance.now() - started).toBeGreaterThanOrEqual(2_000);
      expect(faults.commits).toBe(2);
      expect(await ctx.store.getPayment(ctx.siteId, id)).toMatchObject({ amountMinor: 2999 });
    });

    it(`${name}: stops on 429 without retrying`, async () => {
      // An account of its own: the server reads the counter (and so meets the
      // fault) only while its own commits do not show that a request fits.
      const full = await createTenant(ctx.server);
      faults.overQuota = true;
      faults.usageCalls = 0;
      try {
        const res = await example(name, `pay_quota_${name.replace("-", "_")}`, full);
        expect(res.code).toBe(3);
        expect(res.stderr).toMatch(/monthly event quota exceeded; retry after \d+ s/);
        expect(res.stdout).toMatch(/^payment pay_quota_\S+ recorded\n$/);
        // One events request reached the quota check: no retry.
        expect(faults.usageCalls).toBe(1);
      } finally {
        faults.overQuota = false;
      }
    });
  }
});
