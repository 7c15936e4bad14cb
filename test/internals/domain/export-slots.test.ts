/** Export slots: at most N per site, each released once, even by an export never started. */
import { describe, expect, it } from "vitest";
import { DomainError } from "../../../src/domain/errors.js";
import { createExportSlots, releasingPages } from "../../../src/domain/export-slots.js";

async function* pages(n: number): AsyncGenerator<number[], void, undefined> {
  for (let i = 0; i < n; i++) yield [i];
}

describe("export slots", () => {
  it("refuses the (N+1)th export of a site with too_many_requests and Retry-After", () => {
    const slots = createExportSlots(2);
    slots.take("a");
    slots.take("a");
    slots.take("b");
    let refused: unknown;
    try {
      slots.take("a");
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(DomainError);
    expect(refused).toMatchObject({
      kind: "too_many_requests",
      message: "this site already has 2 exports running, retry later",
      retryAfterSeconds: 10,
    });
    expect([slots.running("a"), slots.running("b")]).toEqual([2, 1]);
  });

  it("releases a slot once when the pages end, fail or are returned, even unstarted", async () => {
    const slots = createExportSlots(1);
    const read = releasingPages(pages(3), slots.take("s"));
    const seen: number[][] = [];
    for await (const p of read) seen.push(p);
    expect(seen).toEqual([[0], [1], [2]]);
    expect(slots.running("s")).toBe(0);

    const unstarted = releasingPages(pages(3), slots.take("s"));
    expect(slots.running("s")).toBe(1);
    await unstarted.return();
    await unstarted.return();
    expect(slots.running("s")).toBe(0);

    async function* failing(): AsyncGenerator<number[], void, undefined> {
      yield [1];
      throw new Error("store down");
    }
    const broken = releasingPages(failing(), slots.take("s"));
    await expect(
      (async () => {
        for await (const _ of broken) {
        }
      })(),
    ).rejects.toThrow("store down");
    expect(slots.running("s")).toBe(0);
    // The next one gets the slot.
    expect(() => slots.take("s")).not.toThrow();
  });
});
