/**
 * Collections for driving the MongoDB adapter without a server: quota
 * counters behave as the server's conditional `$inc` does; every other call
 * is recorded and answered by a script, so a test decides what the driver
 * throws (its own error classes) and when.
 */
import type { Collections } from "../../../src/store/mongo/schema.js";
import { applyPipeline, type Doc } from "./model.js";

type Answer = () => unknown;

export interface FakeCollections {
  c: Collections;
  /** Quota counter values by `_id`. */
  counters: Map<string, number>;
  /** Sequence documents by `_id` (the event counter), updated by the model of pipelines. */
  sequences: Map<string, Doc>;
  /** Every call, as `collection.method`, with its arguments. */
  calls: { name: string; args: unknown[] }[];
  /** Answers for the next calls of `collection.method`, in order; then the default. */
  script(name: string, ...answers: Answer[]): void;
  /** The operations of every `events.bulkWrite`, in order. */
  eventWrites(): unknown[][];
}

export function fakeCollections(): FakeCollections {
  const counters = new Map<string, number>();
  const sequences = new Map<string, Doc>();
  const calls: { name: string; args: unknown[] }[] = [];
  const scripts = new Map<string, Answer[]>();

  const call = async (name: string, args: unknown[], fallback: Answer) => {
    calls.push({ name, args });
    const answer = scripts.get(name)?.shift() ?? fallback;
    return answer();
  };

  const quota = {
    findOne: (filter: { _id: string }) =>
      call("quota.findOne", [filter], () => {
        const count = counters.get(filter._id);
        return count === undefined ? null : { count };
      }),
    // The reservation pipeline, applied by the model of update pipelines; the document before.
    findOneAndUpdate: (filter: { _id: string }, pipeline: Doc[]) =>
      call("quota.findOneAndUpdate", [filter, pipeline], () => {
        const count = counters.get(filter._id);
        const before = count === undefined ? undefined : { _id: filter._id, count };
        const after = applyPipeline(before, filter, pipeline);
        counters.set(filter._id, after.count as number);
        return before ?? null;
      }),
    updateOne: (filter: { _id: string }, update: { $inc: { count: number } }) =>
      call("quota.updateOne", [filter, update], () => {
        counters.set(filter._id, (counters.get(filter._id) ?? 0) + update.$inc.count);
        return { matchedCount: 1 };
      }),
  };
  const recorder = (collection: string, methods: string[]) =>
    Object.fromEntries(
      methods.map((m) => [m, (...args: unknown[]) => call(`${collection}.${m}`, args, () => null)]),
    );

  // Reads (the cap on visitors per user id): a cursor whose documents the script gives, none by default.
  const finder =
    (collection: string) =>
    (...args: unknown[]) => {
      const cursor = {
        limit: () => cursor,
        toArray: () => call(`${collection}.find`, args, () => []),
      };
      return cursor;
    };

  const sequencesCollection = {
    findOneAndUpdate: (filter: { _id: string }, pipeline: Doc[]) =>
      call("sequences.findOneAndUpdate", [filter, pipeline], () => {
        const doc = applyPipeline(sequences.get(filter._id), filter, pipeline);
        sequences.set(filter._id, doc);
        return { n: doc.n };
      }),
  };

  const c = {
    quota,
    sequences: sequencesCollection,
    events: recorder("events", ["bulkWrite"]),
    identities: {
      ...recorder("identities", ["bulkWrite", "deleteOne"]),
      find: finder("identities"),
    },
    touches: { ...recorder("touches", ["findOneAndUpdate"]), find: finder("touches") },
  } as unknown as Collections;

  return {
    c,
    counters,
    sequences,
    calls,
    script(name, ...answers) {
      scripts.set(name, [...(scripts.get(name) ?? []), ...answers]);
    },
    eventWrites() {
      return calls.filter((x) => x.name === "events.bulkWrite").map((x) => x.args[0] as unknown[]);
    },
  };
}
