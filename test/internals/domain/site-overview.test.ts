/** The pure parts of SiteOverview: the days of a period, the top lists, the period's checks. */
import { describe, expect, it } from "vitest";
import {
  daysOf,
  overviewPeriod,
  TOP_ENTRIES,
  topLists,
} from "../../../src/domain/site-overview.js";
import type { DimensionNet, NewVisitorCount } from "../../../src/domain/store/store.js";

const DAY = 86_400_000;
const T = Date.UTC(2026, 2, 9);

const net = (value: string, netMinor: bigint, currency = "USD"): DimensionNet => ({
  value,
  currency,
  netMinor,
});
const visitors = (source: string | undefined, n: number): NewVisitorCount => ({
  channel: "Email",
  ...(source === undefined ? {} : { source }),
  landingPage: "https://example.com/",
  visitors: n,
});

describe("daysOf", () => {
  it("lists every UTC day a period touches, partial days included", () => {
    expect(daysOf(T, T + 3 * DAY)).toEqual(["2026-03-09", "2026-03-10", "2026-03-11"]);
    expect(daysOf(T + 1, T + DAY + 1)).toEqual(["2026-03-09", "2026-03-10"]);
    expect(daysOf(T, T + 1)).toEqual(["2026-03-09"]);
  });
});

describe("topLists", () => {
  it("ranks by new visitors, then value; entries without the dimension are left out", () => {
    const lists = topLists(
      "source",
      [
        visitors("b", 2),
        visitors("a", 2),
        visitors("c", 5),
        visitors(undefined, 9),
        visitors("a", 1),
      ],
      [],
    );
    expect(lists.byVisitors.map((e) => [e.value, e.newVisitors])).toEqual([
      ["c", 5],
      ["a", 3],
      ["b", 2],
    ]);
    expect(lists.byRevenue).toEqual([]);
  });

  it("ranks by net revenue within each currency, never adding two currencies", () => {
    const lists = topLists(
      "source",
      [visitors("a", 1)],
      [net("a", 900n), net("a", 50n), net("b", 1999n), net("a", 5n, "EUR")],
    );
    expect(
      lists.byRevenue.map((e) => [
        e.value,
        e.newVisitors,
        e.net.map((m) => `${m.minor} ${m.currency}`),
      ]),
    ).toEqual([
      ["a", 1, ["5 EUR"]],
      ["b", 0, ["1999 USD"]],
      ["a", 1, ["950 USD"]],
    ]);
    expect(lists.byVisitors[0]?.net).toEqual([
      { currency: "EUR", minor: 5n },
      { currency: "USD", minor: 950n },
    ]);
  });

  it(`keeps ${TOP_ENTRIES} entries per list (per currency by revenue)`, () => {
    const many = Array.from({ length: 15 }, (_, i) => `s${String(i).padStart(2, "0")}`);
    const lists = topLists(
      "source",
      many.map((s, i) => visitors(s, i + 1)),
      many.flatMap((s, i) => [net(s, BigInt(i + 1)), net(s, BigInt(i + 1), "EUR")]),
    );
    expect(lists.byVisitors.map((e) => e.value)).toEqual(many.slice(5).reverse());
    expect(lists.byRevenue).toHaveLength(2 * TOP_ENTRIES);
  });
});

describe("overviewPeriod", () => {
  const parse = (_name: string, value: string) => Date.parse(value);
  it("needs both ends, in order, at most 366 days apart", () => {
    expect(
      overviewPeriod(parse, { from: "2026-03-01T00:00:00Z", to: "2027-03-02T00:00:00Z" }),
    ).toEqual({
      from: Date.UTC(2026, 2, 1),
      to: Date.UTC(2027, 2, 2),
    });
    const fails = (from: string, to: string) => {
      try {
        overviewPeriod(parse, { from, to });
        return undefined;
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(fails("", "2026-03-02T00:00:00Z")).toBe("from: required");
    expect(fails("2026-03-02T00:00:00Z", "")).toBe("to: required");
    expect(fails("2026-03-02T00:00:00Z", "2026-03-02T00:00:00Z")).toBe("to: must be after from");
    expect(fails("2026-03-01T00:00:00Z", "2027-03-02T00:00:01Z")).toBe(
      "to: must be at most 366 days after from",
    );
  });
});
