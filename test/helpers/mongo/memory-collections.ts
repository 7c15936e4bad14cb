/**
 * In-memory collections for the MongoDB adapter's tests, answering the
 * driver's calls in the driver's documented shapes: `find(filter, options)`
 * returns a cursor (`sort`, `limit`, `project`, `toArray`, async iteration)
 * whose query runs when its first batch is fetched; `findOne`; `distinct`;
 * `aggregate(pipeline).toArray()`; `updateOne`, `updateMany`, `bulkWrite`
 * and `findOneAndUpdate` (with `projection`) of update documents or update
 * pipelines (with upsert; an upsert's insert of an `_id` already there fails
 * with the server's duplicate key error, E11000); and
 * `deleteOne`/`deleteMany`. Filters, sort orders, pipelines and
 * aggregations follow the model of the server (model.ts); `$currentDate`
 * stamps the model server's clock. A test scripts the driver's own errors
 * for the next calls of a method, and may check every document the
 * collection stores (against its validator, say).
 */
import { MongoServerError, ObjectId } from "mongodb";
import {
  aggregate,
  applyPipeline,
  compareValues,
  type Doc,
  equalityFields,
  isPlainObject,
  matches,
} from "./model.js";

/** The server's clock of the model, in ms; tests move it. */
export interface ServerClock {
  now: number;
}

function compareBy(spec: Doc) {
  return (a: Doc, b: Doc) => {
    for (const [k, dir] of Object.entries(spec)) {
      const c = compareValues(a[k], b[k]);
      if (c !== 0) return (dir as number) < 0 ? -c : c;
    }
    return 0;
  };
}

/**
 * An update applied as the server does, to `existing` or, on upsert, to a
 * new document seeded from the filter's equality fields: an update document
 * ($set, $setOnInsert, $unset, $inc, $min, $max, $push/$each, $currentDate)
 * or an update pipeline (model.ts). Refused as the server refuses them: one
 * path in two operators, and an undefined value; refused as not modelled: a
 * field name with `$` or `.` (the adapter writes whole top-level fields).
 */
export function applyUpdate(
  existing: Doc | undefined,
  filter: Doc,
  update: Doc | Doc[],
  clock: ServerClock,
): Doc {
  if (Array.isArray(update)) return applyPipeline(existing, filter, update);
  const doc: Doc = existing ? { ...existing } : { ...equalityFields(filter) };
  const touched = new Set<string>();
  for (const [op, fields] of Object.entries(update)) {
    for (const [k, v] of Object.entries(fields as Doc)) {
      // The server refuses one path in two operators ("would create a conflict").
      if (touched.has(k)) throw new Error(`conflict on ${k}`);
      touched.add(k);
      if (k.startsWith("$") || k.includes(".")) throw new Error(`bad field ${k}`);
      if (v === undefined) throw new Error(`undefined value for ${k}`);
      switch (op) {
        case "$set":
          doc[k] = v;
          break;
        case "$setOnInsert":
          if (!existing) doc[k] = v;
          break;
        case "$unset":
          delete doc[k];
          break;
        case "$inc":
          doc[k] = ((doc[k] as number | undefined) ?? 0) + (v as number);
          break;
        case "$min":
          if (doc[k] === undefined || compareValues(v, doc[k]) < 0) doc[k] = v;
          break;
        case "$max":
          if (doc[k] === undefined || compareValues(v, doc[k]) > 0) doc[k] = v;
          break;
        case "$push":
          doc[k] = [
            ...((doc[k] as unknown[] | undefined) ?? []),
            ...(isPlainObject(v) && "$each" in v ? (v.$each as unknown[]) : [v]),
          ];
          break;
        case "$currentDate":
          doc[k] = new Date(clock.now);
          break;
        default:
          throw new Error(`operator ${op} not modelled`);
      }
    }
  }
  return doc;
}

/** What a test adds to a collection of the model. */
export interface MemoryCollectionOptions {
  /** Called with every document the collection is about to store (an insert or an update's result). */
  check?: (doc: Doc) => void;
}

/** Update documents or pipelines, as the driver takes them. */
type Update = Doc | Doc[];

/** One collection of the model server: its documents, and the calls it was asked. */
export class MemoryCollection {
  docs: Doc[] = [];
  /** Every call by method name, in order. */
  readonly calls: string[] = [];
  /** Every query a cursor ran: its filter and projection. */
  readonly finds: { filter: Doc; projection?: Doc }[] = [];
  private readonly failures = new Map<string, Error[]>();

  constructor(
    private readonly clock: ServerClock,
    private readonly options: MemoryCollectionOptions = {},
  ) {}

  /**
   * `update` applied to `existing` (or inserted, with the `_id` the server
   * gives a document without one), checked before it is stored.
   */
  private updated(existing: Doc | undefined, filter: Doc, update: Update): Doc {
    const doc = applyUpdate(existing, filter, update, this.clock);
    if (!existing && doc._id === undefined) doc._id = new ObjectId();
    this.options.check?.(doc);
    return doc;
  }

  /** The next calls of `method` throw these errors, in order (a cursor throws when it fetches). */
  failNext(method: string, ...errors: Error[]): void {
    this.failures.set(method, [...(this.failures.get(method) ?? []), ...errors]);
  }

  private readonly queryFailures: { match: (filter: Doc) => boolean; error: Error }[] = [];

  /** The next query whose filter `match`es throws `error` when its cursor fetches. */
  failNextQuery(match: (filter: Doc) => boolean, error: Error): void {
    this.queryFailures.push({ match, error });
  }

  private call(method: string): void {
    this.calls.push(method);
    const err = this.failures.get(method)?.shift();
    if (err) throw err;
  }

  find(filter: Doc = {}, options: { projection?: Doc } = {}) {
    let sort: Doc | undefined;
    let limit = 0;
    const run = () => {
      this.call("find");
      const i = this.queryFailures.findIndex((f) => f.match(filter));
      if (i >= 0) throw this.queryFailures.splice(i, 1)[0]?.error;
      this.finds.push({
        filter,
        ...(options.projection ? { projection: options.projection } : {}),
      });
      let found = this.docs.filter((d) => matches(d, filter));
      if (sort) found = [...found].sort(compareBy(sort));
      if (limit > 0) found = found.slice(0, limit);
      return found.map((d) => project(clone(d), options.projection));
    };
    const cursor = {
      sort(spec: Doc) {
        sort = spec;
        return cursor;
      },
      limit(n: number) {
        limit = n;
        return cursor;
      },
      async toArray() {
        return run();
      },
      async *[Symbol.asyncIterator]() {
        for (const d of run()) yield d;
      },
    };
    return cursor;
  }

  async findOne(filter: Doc, options: { projection?: Doc } = {}) {
    this.call("findOne");
    const d = this.docs.find((x) => matches(x, filter));
    return d ? project(clone(d), options.projection) : null;
  }

  /** The distinct values of `field` among the documents `filter` matches. */
  async distinct(field: string, filter: Doc = {}) {
    this.call("distinct");
    return [...new Set(this.docs.filter((d) => matches(d, filter)).map((d) => d[field]))];
  }

  /** An aggregation of the model (model.ts), run when its result is fetched. */
  aggregate(pipeline: Doc[], _options: Doc = {}) {
    return {
      toArray: async () => {
        this.call("aggregate");
        return aggregate(this.docs.map(clone), pipeline);
      },
    };
  }

  async updateOne(filter: Doc, update: Update, options: { upsert?: boolean } = {}) {
    this.call("updateOne");
    return this.upsert(filter, update, options.upsert === true);
  }

  /**
   * The driver's findOneAndUpdate (v6: the document, or null), `returnDocument`
   * "before" by default, only the `projection`'s fields when given.
   */
  async findOneAndUpdate(
    filter: Doc,
    update: Update,
    options: { upsert?: boolean; returnDocument?: "before" | "after"; projection?: Doc } = {},
  ) {
    this.call("findOneAndUpdate");
    const after = options.returnDocument === "after";
    const i = this.docs.findIndex((d) => matches(d, filter));
    if (i >= 0) {
      const before = this.docs[i] as Doc;
      const updated = this.updated(before, filter, update);
      this.docs[i] = updated;
      return project(clone(after ? updated : before), options.projection);
    }
    if (!options.upsert) return null;
    const inserted = this.insertUnique(this.updated(undefined, filter, update));
    return after ? project(clone(inserted), options.projection) : null;
  }

  async updateMany(filter: Doc, update: Update) {
    this.call("updateMany");
    let modifiedCount = 0;
    this.docs = this.docs.map((d) => {
      if (!matches(d, filter)) return d;
      modifiedCount++;
      return this.updated(d, filter, update);
    });
    return { modifiedCount };
  }

  async bulkWrite(ops: { updateOne: { filter: Doc; update: Update; upsert?: boolean } }[]) {
    this.call("bulkWrite");
    for (const { updateOne } of ops) {
      this.upsert(updateOne.filter, updateOne.update, updateOne.upsert === true);
    }
    return {};
  }

  async deleteOne(filter: Doc) {
    this.call("deleteOne");
    const i = this.docs.findIndex((d) => matches(d, filter));
    if (i >= 0) this.docs.splice(i, 1);
    return { deletedCount: i >= 0 ? 1 : 0 };
  }

  async deleteMany(filter: Doc) {
    this.call("deleteMany");
    const before = this.docs.length;
    this.docs = this.docs.filter((d) => !matches(d, filter));
    return { deletedCount: before - this.docs.length };
  }

  private upsert(filter: Doc, update: Update, upsert: boolean) {
    const i = this.docs.findIndex((d) => matches(d, filter));
    if (i >= 0) {
      this.docs[i] = this.updated(this.docs[i], filter, update);
      return { matchedCount: 1, upsertedCount: 0 };
    }
    if (!upsert) return { matchedCount: 0, upsertedCount: 0 };
    this.insertUnique(this.updated(undefined, filter, update));
    return { matchedCount: 0, upsertedCount: 1 };
  }

  /** Inserts `doc` unless its `_id` is taken (the server's unique `_id_` index). */
  private insertUnique(doc: Doc): Doc {
    if (this.docs.some((d) => compareValues(d._id, doc._id) === 0)) {
      throw new MongoServerError({
        ok: 0,
        code: 11000,
        errmsg: `E11000 duplicate key error collection: ingest.memory index: _id_ dup key: { _id: ${JSON.stringify(String(doc._id))} }`,
      });
    }
    this.docs.push(doc);
    return doc;
  }
}

/** A deep copy of a document that keeps BSON values (ObjectId, Long, Date) as they are. */
function clone(d: Doc): Doc {
  const copy = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(copy)
      : isPlainObject(v)
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, copy(x)]))
        : v;
  return copy(d) as Doc;
}

/** Only the projection's fields (with `_id` unless excluded), as the server returns them. */
function project(d: Doc, projection: Doc | undefined): Doc {
  if (!projection) return d;
  const out: Doc = projection._id === 0 ? {} : { _id: d._id };
  for (const [k, v] of Object.entries(projection)) if (v === 1 && k in d) out[k] = d[k];
  return out;
}
