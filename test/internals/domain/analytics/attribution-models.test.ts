/**
 * How each attribution model splits one payment across a customer's touches:
 * exact minor units, largest remainder, ties to the earlier touch, refunds
 * mirrored, and the unattributed share when there is no touch.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  largestRemainder,
  splitPayment,
} from "../../../../src/domain/analytics/attribution-models.js";
import { ATTRIBUTION_MODELS } from "../../../../src/domain/analytics/query-plan.js";

const D = { direct: true };
const N = { direct: false };

/** The shares as [touch index, minor] pairs, for exact comparison. */
function split(
  model: Parameters<typeof splitPayment>[0],
  amount: bigint,
  touches: { direct: boolean }[],
) {
  return splitPayment(model, amount, touches).map((s) => [s.touchIndex, s.minor]);
}

describe("attribution models", () => {
  it("puts the whole amount in one unattributed share when there is no touch, for every model", () => {
    for (const model of ATTRIBUTION_MODELS) {
      expect(split(model, 1234n, [])).toEqual([[undefined, 1234n]]);
      expect(split(model, -500n, [])).toEqual([[undefined, -500n]]);
    }
  });

  it("first_touch credits the first touch given (the stored attribution) with the whole", () => {
    expect(split("first_touch", 1000n, [D, N, N])).toEqual([[0, 1000n]]);
  });

  it("last_touch credits the last touch, direct or not", () => {
    expect(split("last_touch", 1000n, [N, N, D])).toEqual([[2, 1000n]]);
  });

  it("last_non_direct credits the last touch that is not direct", () => {
    expect(split("last_non_direct", 1000n, [N, N, D, D])).toEqual([[1, 1000n]]);
    expect(split("last_non_direct", 1000n, [D, N])).toEqual([[1, 1000n]]);
  });

  it("last_non_direct falls back to the last touch when every touch is direct", () => {
    expect(split("last_non_direct", 1000n, [D, D, D])).toEqual([[2, 1000n]]);
  });

  it("linear gives equal parts, the leftover units to the earlier touches", () => {
    expect(split("linear", 900n, [N, D, N])).toEqual([
      [0, 300n],
      [1, 300n],
      [2, 300n],
    ]);
    expect(split("linear", 1000n, [N, D, N])).toEqual([
      [0, 334n],
      [1, 333n],
      [2, 333n],
    ]);
    expect(split("linear", 1001n, [N, D, N])).toEqual([
      [0, 334n],
      [1, 334n],
      [2, 333n],
    ]);
  });

  it("linear mirrors a refund: the same parts, negated", () => {
    expect(split("linear", -1000n, [N, D, N])).toEqual([
      [0, -334n],
      [1, -333n],
      [2, -333n],
    ]);
  });

  it("position_based gives 100 % to a single touch and 50/50 to two", () => {
    expect(split("position_based", 999n, [D])).toEqual([[0, 999n]]);
    expect(split("position_based", 999n, [D, N])).toEqual([
      [0, 500n],
      [1, 499n],
    ]);
  });

  it("position_based gives 40 % to the first and last touches and shares 20 % among the middle", () => {
    expect(split("position_based", 1000n, [N, N, N])).toEqual([
      [0, 400n],
      [1, 200n],
      [2, 400n],
    ]);
    expect(split("position_based", 1000n, [N, N, N, N])).toEqual([
      [0, 400n],
      [1, 100n],
      [2, 100n],
      [3, 400n],
    ]);
    // 1001 over 40/6.67/6.67/6.67/40: 400.4, 66.73, 66.73, 66.73, 400.4 → the three units left
    // go to the largest remainders (.73 against .4).
    expect(split("position_based", 1001n, [N, N, N, N, N])).toEqual([
      [0, 400n],
      [1, 67n],
      [2, 67n],
      [3, 67n],
      [4, 400n],
    ]);
  });

  it("largest remainder breaks ties toward the earlier part", () => {
    expect(largestRemainder(1n, [1n, 1n, 1n], 3n)).toEqual([1n, 0n, 0n]);
    expect(largestRemainder(2n, [1n, 1n, 1n], 3n)).toEqual([1n, 1n, 0n]);
    expect(largestRemainder(-2n, [1n, 1n, 1n], 3n)).toEqual([-1n, -1n, 0n]);
  });

  it("splits a zero amount into zero shares", () => {
    expect(split("linear", 0n, [N, N])).toEqual([
      [0, 0n],
      [1, 0n],
    ]);
  });
});

describe("attribution models (properties)", () => {
  const touches = fc.array(fc.record({ direct: fc.boolean() }), { maxLength: 12 });
  const amount = fc.bigInt({ min: -(10n ** 15n), max: 10n ** 15n });
  const model = fc.constantFrom(...ATTRIBUTION_MODELS);

  it("the shares add up to the amount exactly, each touch at most once, in order", () => {
    fc.assert(
      fc.property(model, amount, touches, (m, a, t) => {
        const shares = splitPayment(m, a, t);
        expect(shares.reduce((s, x) => s + x.minor, 0n)).toBe(a);
        const idx = shares.map((s) => s.touchIndex ?? -1);
        expect([...idx].sort((x, y) => x - y)).toEqual(idx);
        expect(new Set(idx).size).toBe(idx.length);
        for (const i of idx) expect(i).toBeLessThan(Math.max(t.length, 1));
      }),
    );
  });

  it("a non-negative amount gives non-negative shares, a negative one non-positive shares", () => {
    fc.assert(
      fc.property(model, amount, touches, (m, a, t) => {
        for (const s of splitPayment(m, a, t)) {
          if (a >= 0n) expect(s.minor >= 0n).toBe(true);
          else expect(s.minor <= 0n).toBe(true);
        }
      }),
    );
  });

  it("a refund is split as the exact negation of the payment it reverses", () => {
    fc.assert(
      fc.property(model, amount, touches, (m, a, t) => {
        const pos = splitPayment(m, a, t);
        const neg = splitPayment(m, -a, t);
        expect(neg).toEqual(pos.map((s) => ({ touchIndex: s.touchIndex, minor: -s.minor })));
      }),
    );
  });

  it("linear and position_based depend on positions only: re-ordering what the touches are changes nothing", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("linear", "position_based" as const),
        amount,
        touches,
        (m, a, t) => {
          const flipped = t.map((x) => ({ direct: !x.direct })).reverse();
          expect(splitPayment(m, a, flipped)).toEqual(splitPayment(m, a, t));
        },
      ),
    );
  });

  it("linear shares differ by at most one unit and never increase from earlier to later touches", () => {
    fc.assert(
      fc.property(amount, touches, (a, t) => {
        const parts = splitPayment("linear", a, t).map((s) => (a < 0n ? -s.minor : s.minor));
        for (let i = 1; i < parts.length; i++) {
          const d = (parts[i - 1] as bigint) - (parts[i] as bigint);
          expect(d === 0n || d === 1n).toBe(true);
        }
      }),
    );
  });

  it("position_based is symmetric up to a unit: reversing the touches mirrors the shares", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 12n }), touches, (a, t) => {
        const fwd = splitPayment("position_based", a, t).map((s) => s.minor);
        const back = splitPayment("position_based", a, [...t].reverse())
          .map((s) => s.minor)
          .reverse();
        fwd.forEach((x, i) => {
          const d = x - (back[i] as bigint);
          expect(d >= -1n && d <= 1n).toBe(true);
        });
      }),
    );
  });

  it("the single-touch models credit one touch, and last_non_direct a non-direct one when there is any", () => {
    fc.assert(
      fc.property(amount, touches, (a, t) => {
        for (const m of ["first_touch", "last_touch", "last_non_direct"] as const) {
          expect(splitPayment(m, a, t)).toHaveLength(1);
        }
        const [s] = splitPayment("last_non_direct", a, t);
        const i = s?.touchIndex;
        if (i !== undefined && t.some((x) => !x.direct)) {
          expect(t[i]?.direct).toBe(false);
          expect(t.slice(i + 1).every((x) => x.direct)).toBe(true);
        }
      }),
    );
  });
});
