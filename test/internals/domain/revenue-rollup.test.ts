/**
 * The daily revenue rollup's rule (src/domain/revenue-rollup.ts): which part
 * of a payment counts where, how a change is taken away and added, and that
 * a write's deltas are summed per cell with the unchanged cells left out.
 */
import { describe, expect, it } from "vitest";
import { type CountedPayment, createRevenueDeltas } from "../../../src/domain/revenue-rollup.js";

/** 2025-06-01T00:00:00Z. */
const T0 = Date.UTC(2025, 5, 1);
const DAY = 86_400_000;

const charge: CountedPayment = {
  siteId: "site_1",
  status: "succeeded",
  kind: "charge",
  amountMinor: 1000,
  currency: "USD",
  paidAt: T0 + 5,
  channel: "Paid Search",
  attribution: { source: "google", campaign: "spring", landingPage: "https://example.com/" },
};

const cell = {
  siteId: "site_1",
  day: "2025-06-01",
  currency: "USD",
  channel: "Paid Search",
};

describe("revenue rollup deltas", () => {
  it("a succeeded payment counts its amount under its kind, its day and channel, and its net under each dimension", () => {
    const d = createRevenueDeltas();
    d.count(charge, 1);
    d.count({ ...charge, kind: "refund", amountMinor: 300, paidAt: T0 + 6 }, 1);
    d.count({ ...charge, kind: "chargeback", amountMinor: 200, paidAt: T0 + 7 }, 1);
    expect(d.days()).toEqual([
      { ...cell, gross: 1000, refunds: 300, chargebacks: 200, payments: 3 },
    ]);
    const dim = { siteId: "site_1", day: "2025-06-01", currency: "USD", net: 500, payments: 3 };
    expect(d.dims()).toEqual([
      { ...dim, dimension: "source", value: "google" },
      { ...dim, dimension: "campaign", value: "spring" },
      { ...dim, dimension: "landing_page", value: "https://example.com/" },
    ]);
  });

  it("pending and failed payments count nowhere; an unattributed one only under its channel", () => {
    const d = createRevenueDeltas();
    d.count({ ...charge, status: "pending" }, 1);
    d.count({ ...charge, status: "failed" }, 1);
    expect(d.days()).toEqual([]);
    d.count({ ...charge, channel: "unattributed", attribution: undefined }, 1);
    expect(d.days()).toEqual([
      { ...cell, channel: "unattributed", gross: 1000, refunds: 0, chargebacks: 0, payments: 1 },
    ]);
    expect(d.dims()).toEqual([]);
  });

  it("a change takes the old part away from its cells and adds the new part to its own", () => {
    const d = createRevenueDeltas();
    d.change(charge, { ...charge, paidAt: T0 + DAY, channel: "Email", attribution: undefined });
    expect(d.days()).toEqual([
      { ...cell, gross: -1000, refunds: 0, chargebacks: 0, payments: -1 },
      {
        ...cell,
        day: "2025-06-02",
        channel: "Email",
        gross: 1000,
        refunds: 0,
        chargebacks: 0,
        payments: 1,
      },
    ]);
    expect(d.dims().map((c) => [c.dimension, c.net, c.payments])).toEqual([
      ["source", -1000, -1],
      ["campaign", -1000, -1],
      ["landing_page", -1000, -1],
    ]);
  });

  it("each counted field moves the payment's part on its own", () => {
    const changes: Partial<CountedPayment>[] = [
      { siteId: "site_2" },
      { status: "failed" },
      { kind: "refund" },
      { amountMinor: 999 },
      { currency: "EUR" },
      { paidAt: T0 + DAY },
      { channel: "Email" },
    ];
    for (const change of changes) {
      const d = createRevenueDeltas();
      d.change(charge, { ...charge, ...change });
      expect(d.days().length, JSON.stringify(change)).toBeGreaterThan(0);
    }
    for (const attribution of [{ ...charge.attribution, source: "bing" }, undefined]) {
      const d = createRevenueDeltas();
      d.change(charge, { ...charge, attribution });
      expect(d.days()).toEqual([]);
      expect(d.dims().length).toBeGreaterThan(0);
    }
  });

  it("a change that leaves every cell as it was writes no cell", () => {
    const d = createRevenueDeltas();
    d.change(charge, { ...charge });
    d.count({ ...charge, amountMinor: 5 }, 1);
    d.count({ ...charge, amountMinor: 5 }, -1);
    expect(d.days()).toEqual([]);
    expect(d.dims()).toEqual([]);
  });

  it("sums stay exact past 2^53: a number while safe, a bigint beyond", () => {
    const d = createRevenueDeltas();
    const max = Number.MAX_SAFE_INTEGER;
    d.count({ ...charge, amountMinor: max, attribution: undefined }, 1);
    d.count({ ...charge, amountMinor: max, attribution: undefined }, 1);
    d.count({ ...charge, amountMinor: 1, attribution: undefined }, 1);
    const [sum] = d.days();
    expect(sum?.gross).toBe(2n * BigInt(max) + 1n);
    expect(typeof createRevenueDeltas().days()).toBe("object");
    const small = createRevenueDeltas();
    small.count(charge, 1);
    expect(typeof small.days()[0]?.gross).toBe("number");
  });
});
