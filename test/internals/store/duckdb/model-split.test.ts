import { DuckDBInstance } from "@duckdb/node-api";
import { describe, expect, it } from "vitest";
import { splitPayment } from "../../../../src/domain/analytics/attribution-models.js";
import { modelSplit } from "../../../../src/store/duckdb/model-split.js";

/** One payment: its magnitude and its touches' directness, in time order. */
interface Case {
  mag: bigint;
  direct: boolean[];
}

/** Every touch count to 12, magnitudes 0–130 and the largest, directness patterns that move the last non-direct touch. */
function cases(): Case[] {
  const mags = [
    ...Array.from({ length: 131 }, (_, i) => BigInt(i)),
    999_999_999_999_999n,
    9_007_199_254_740_991n,
  ];
  const out: Case[] = [];
  for (let n = 1; n <= 12; n++) {
    const patterns = [
      Array.from({ length: n }, () => false),
      Array.from({ length: n }, () => true),
      Array.from({ length: n }, (_, i) => i !== 0),
      Array.from({ length: n }, (_, i) => i % 2 === 1),
      Array.from({ length: n }, (_, i) => i === n - 1),
    ];
    for (const mag of mags) for (const direct of patterns) out.push({ mag, direct });
  }
  return out;
}

describe("modelSplit", () => {
  it("splits every payment of up to 12 touches exactly as the domain's largest remainder does, under every multi-touch model", async () => {
    const instance = await DuckDBInstance.create(":memory:", { threads: "1" });
    const conn = await instance.connect();
    try {
      const all = cases();
      // The payments `c` (magnitude, touch count, last non-direct place) and the places `t`.
      await conn.run(
        `CREATE TABLE c AS SELECT * FROM (VALUES ${all
          .map((k, id) => {
            const lnd = k.direct.lastIndexOf(false);
            return `(${id}, ${k.mag}::BIGINT, ${k.direct.length}::BIGINT, ${lnd < 0 ? "NULL" : lnd}::BIGINT)`;
          })
          .join(", ")}) AS v(id, mag, n, lnd)`,
      );
      await conn.run("CREATE TABLE t AS SELECT range AS idx FROM range(0, 12)");
      for (const [model, split] of Object.entries(modelSplit)) {
        const rows = (
          await conn.runAndReadAll(
            `SELECT c.id, t.idx, (${split.minor})::BIGINT
             FROM (SELECT *${split.perPayment ? `, ${split.perPayment}` : ""} FROM c) c JOIN t
             ON t.idx < c.n AND ${split.credited} ORDER BY c.id, t.idx`,
          )
        ).getRows();
        const got = new Map<number, string[]>();
        for (const [id, idx, minor] of rows) {
          const list = got.get(Number(id)) ?? [];
          list.push(`${idx}:${minor}`);
          got.set(Number(id), list);
        }
        all.forEach((k, id) => {
          const want = splitPayment(
            model as keyof typeof modelSplit,
            k.mag,
            k.direct.map((direct) => ({ direct })),
          ).map((s) => `${s.touchIndex}:${s.minor}`);
          expect({ model, ...k, shares: got.get(id) }).toEqual({ model, ...k, shares: want });
        });
      }
    } finally {
      conn.closeSync();
      instance.closeSync();
    }
  });
});
