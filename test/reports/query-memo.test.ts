/**
 * Queries of one write generation share what they compute (the period's
 * visitors, the payment shares, a funnel's first step: read-memo.ts), and a
 * write ends the generation: the same Query and Funnel asked again after an
 * acknowledged pageview and payment answer from the new data at once, and
 * queries sent together answer exactly as each alone.
 */
import { describe, expect, it } from "vitest";
import { recordPayment, sendFrom } from "../helpers/events.js";
import {
  JOURNEY_QUERY_ANSWER as ANSWER,
  count,
  JOURNEY_FUNNEL as FUNNEL,
  JOURNEY_FUNNEL_ANSWER as FUNNEL_ANSWER,
  MIN,
  JOURNEY_QUERY as QUERY,
  sendJourney,
  T0,
  usd,
} from "../helpers/query-journey.js";
import { postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

// Eight at once: the site's query slots allow them.
const ctx = useTestServer({ env: { ANALYTICS_QUERIES_PER_SITE: "8" } });

const ask = (path: "query" | "funnel", body: unknown) =>
  postJson(`${ctx.url}/api/v1/sites/${ctx.siteId}/${path}`, body, { headers: ctx.adminHeaders });

/** The journey's answers once visitor C landed from the newsletter too and paid 19.99 USD. */
const WITH_C = {
  ...ANSWER,
  rows: [
    {
      dimensions: ["Email"],
      metrics: [count(2), count(2), count(3), { number: 50 }, usd(4498, "44.98")],
    },
    ...ANSWER.rows.slice(1),
  ],
  totals: [count(3), count(4), count(5), { number: 75 }, usd(4498, "44.98")],
};
const FUNNEL_WITH_C = {
  ...FUNNEL_ANSWER,
  steps: [
    { ...FUNNEL_ANSWER.steps[0], visitors: "3" },
    { ...FUNNEL_ANSWER.steps[1], conversionFromPrevious: 66.67, conversionOverall: 66.67 },
    { ...FUNNEL_ANSWER.steps[2], conversionOverall: 33.33 },
  ],
};

describe("queries of one write generation", () => {
  it("answer the same Query and Funnel again from the data a write changed, and together as each alone", async () => {
    await sendJourney(ctx.url, ctx.siteId, ctx.key);
    expect((await ask("query", QUERY)).body).toEqual(ANSWER);
    expect((await ask("funnel", FUNNEL)).body).toEqual(FUNNEL_ANSWER);
    // Asked again with no write between: the same answers.
    expect((await ask("query", QUERY)).body).toEqual(ANSWER);
    expect((await ask("funnel", FUNNEL)).body).toEqual(FUNNEL_ANSWER);

    // Visitor C lands from the newsletter (one pageview: a bounce) and pays 19.99 USD.
    const c = "visitor-cccc-000003";
    await sendFrom(
      ctx,
      {
        e: "pageview",
        u: "https://example.com/?utm_source=newsletter&utm_medium=email",
        vid: c,
        ts: T0 + 30 * MIN,
      },
      "198.51.100.30",
    );
    await recordPayment(ctx, {
      payment_id: "pay_c",
      customer: { id: "cus_c", visitor_id: c },
      amount: 19.99,
      currency: "USD",
      kind: "charge",
      paid_at: new Date(T0 + 31 * MIN).toISOString(),
    });

    // The same requests, four of each at once: every answer counts C.
    const answers = await Promise.all([
      ...[1, 2, 3, 4].map(() => ask("query", QUERY)),
      ...[1, 2, 3, 4].map(() => ask("funnel", FUNNEL)),
    ]);
    for (const res of answers.slice(0, 4)) expect(res.body).toEqual(WITH_C);
    for (const res of answers.slice(4)) expect(res.body).toEqual(FUNNEL_WITH_C);
  });
});
