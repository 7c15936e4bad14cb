/**
 * Property-based robustness of POST /api/v1/collect through real HTTP:
 * whatever the body, content type and Origin, the answer is 200/204 for an
 * acceptable event or a 4xx error envelope, and always readable cross-origin
 * (Access-Control-Allow-Origin: *); never a 5xx, a crash or a hang.
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { BROWSER_UA } from "../helpers/collect.js";
import {
  anyJsonText,
  assertRestError,
  describeRequest,
  runs,
  SEED,
  send,
  TEST_TIMEOUT,
} from "../helpers/robustness.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer({ env: { COLLECT_RATE_LIMIT: "0" } });
beforeAll(async () => {
  console.info(`collect-fuzz: fast-check seed ${SEED} (replay with FC_SEED=${SEED})`);
});

/** Event-shaped bodies with fields that are sometimes right, sometimes not. */
const eventish = (siteId: string) =>
  fc
    .record(
      {
        s: fc.oneof(fc.constant(siteId), fc.string(), fc.constant("site_unknown")),
        e: fc.oneof(fc.constantFrom("pageview", "$identify", "Signup"), fc.string()),
        u: fc.oneof(
          fc.constantFrom("https://example.com/", "https://evil.test/", "ftp://example.com/"),
          fc.webUrl(),
          fc.string(),
        ),
        r: fc.oneof(fc.webUrl(), fc.string()),
        t: fc.string({ maxLength: 600 }),
        w: fc.oneof(fc.integer(), fc.double(), fc.string()),
        l: fc.string(),
        uid: fc.string(),
        p: fc.oneof(fc.object(), fc.jsonValue()),
        ts: fc.oneof(fc.integer(), fc.double()),
        ip: fc.oneof(fc.ipV4(), fc.ipV6(), fc.string()),
        ua: fc.string(),
        b: fc.array(fc.object(), { maxLength: 3 }),
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o));

describe("collect robustness", () => {
  it(
    "answers every body with a success or a readable 4xx envelope",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(eventish(ctx.siteId), anyJsonText, fc.string({ maxLength: 9000 })),
          fc.constantFrom(
            "text/plain;charset=UTF-8",
            "application/json",
            "text/plain",
            "text/html",
          ),
          fc.option(
            fc.constantFrom("https://example.com", "https://evil.test", "null", "garbage"),
            { nil: undefined },
          ),
          async (body, contentType, origin) => {
            const headers: Record<string, string> = {
              "content-type": contentType,
              "user-agent": BROWSER_UA,
              ...(origin ? { origin } : {}),
            };
            const url = `${ctx.url}/api/v1/collect`;
            const context = describeRequest({ url, headers, body });
            const answer = await send(url, { headers, body });
            expect(answer.headers.get("access-control-allow-origin"), context).toBe("*");
            if (answer.status === 200 || answer.status === 204) return;
            assertRestError(answer, context, { input: body });
            expect(answer.status, context).toBeLessThan(500);
          },
        ),
        runs(200),
      );
    },
    TEST_TIMEOUT,
  );
});
