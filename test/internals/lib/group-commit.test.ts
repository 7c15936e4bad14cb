/** The group commit on its own: batches, their order, and how many are written at once. */
import { describe, expect, it } from "vitest";
import { createGroupCommit } from "../../../src/lib/group-commit.js";

/** A commit whose batches wait until the test lets them finish. */
function heldCommits() {
  const started: number[][] = [];
  const finish: ((fail?: Error) => void)[] = [];
  const commit = (items: number[]) => {
    started.push(items);
    return new Promise<string[]>((resolve, reject) => {
      finish.push((fail) => (fail ? reject(fail) : resolve(items.map((i) => `ok ${i}`))));
    });
  };
  return { started, finish, commit };
}

const turn = () => new Promise((r) => setTimeout(r, 5));

/** Waits (a turn at a time) until `cond` holds, however slow the machine. */
async function until(cond: () => boolean) {
  while (!cond()) await turn();
}

describe("group commit", () => {
  it("with one batch in flight, the next starts only after the previous finished", async () => {
    const { started, finish, commit } = heldCommits();
    const gc = createGroupCommit<number, string>({
      capacity: 100,
      batchMax: 2,
      flushMs: 0,
      commit,
    });
    const answers = [1, 2, 3].map((i) => gc.submit(i));
    await until(() => started.length === 1);
    await turn();
    expect(started).toEqual([[1, 2]]);
    finish[0]?.();
    expect(await Promise.all(answers.slice(0, 2))).toEqual(["ok 1", "ok 2"]);
    await until(() => started.length === 2);
    expect(started).toEqual([[1, 2], [3]]);
    finish[1]?.();
    expect(await answers[2]).toBe("ok 3");
  });

  it("with two in flight, the next batch starts while the first is written, in submission order", async () => {
    const { started, finish, commit } = heldCommits();
    const gc = createGroupCommit<number, string>({
      capacity: 100,
      batchMax: 2,
      flushMs: 0,
      inFlight: 2,
      commit,
    });
    const answers = [1, 2, 3, 4, 5].map((i) => gc.submit(i));
    await until(() => started.length === 2);
    await turn();
    expect(started).toEqual([
      [1, 2],
      [3, 4],
    ]);
    // The second batch may finish first; each caller still gets its own result.
    finish[1]?.();
    expect(await Promise.all(answers.slice(2, 4))).toEqual(["ok 3", "ok 4"]);
    await until(() => started.length === 3);
    expect(started).toEqual([[1, 2], [3, 4], [5]]);
    finish[0]?.(new Error("disk"));
    await expect(answers[0]).rejects.toThrow("disk");
    await expect(answers[1]).rejects.toThrow("disk");
    const drained = gc.drain();
    finish[2]?.();
    await drained;
    expect(await answers[4]).toBe("ok 5");
    expect(gc.load).toBe(0);
  });

  it("drain waits for every batch in flight", async () => {
    const { started, finish, commit } = heldCommits();
    const gc = createGroupCommit<number, string>({
      capacity: 100,
      batchMax: 1,
      flushMs: 0,
      inFlight: 3,
      commit,
    });
    const answers = [1, 2].map((i) => gc.submit(i));
    await until(() => started.length === 2);
    let drained = false;
    const d = gc.drain().then(() => {
      drained = true;
    });
    finish[1]?.();
    await answers[1];
    await turn();
    expect(drained).toBe(false);
    finish[0]?.();
    await d;
    expect(drained).toBe(true);
  });
});
