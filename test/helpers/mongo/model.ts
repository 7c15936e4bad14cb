/**
 * A small model of the MongoDB server, enough to run the adapter's update
 * pipelines, queries and report aggregations without a server (see
 * mongo-offline.test.ts). It follows the documented semantics of the
 * operators the adapter uses and refuses any other, so a new operator in the
 * adapter fails here until it is modelled. It is a check of the adapter's
 * logic, not of the server: the contract suite against a real server
 * (mongodb.test.ts) remains the real check.
 */
import { Long, ObjectId } from "mongodb";

export type Doc = Record<string, unknown>;

/** A missing field (distinct from null), as the server tells them apart. */
export const MISSING: unique symbol = Symbol("missing");
type Value = unknown;

export function isPlainObject(v: unknown): v is Doc {
  return typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

function isOperatorObject(v: unknown): v is Doc {
  return (
    isPlainObject(v) && Object.keys(v).length > 0 && Object.keys(v)[0]?.startsWith("$") === true
  );
}

function isNumber(v: unknown): v is number | Long | bigint {
  return typeof v === "number" || typeof v === "bigint" || v instanceof Long;
}

function toBig(v: number | Long | bigint): bigint {
  if (typeof v === "bigint") return v;
  if (v instanceof Long) return v.toBigInt();
  if (!Number.isInteger(v)) throw new Error(`model handles integers only, got ${v}`);
  return BigInt(v);
}

/** The BSON comparison order of types (missing and null sort lowest). */
function typeRank(v: Value): number {
  if (v === MISSING || v === undefined) return 0;
  if (v === null) return 1;
  if (isNumber(v)) return 2;
  if (typeof v === "string") return 3;
  if (isPlainObject(v)) return 4;
  if (Array.isArray(v)) return 5;
  if (v instanceof ObjectId) return 7;
  if (typeof v === "boolean") return 8;
  if (v instanceof Date) return 9;
  throw new Error(`model cannot compare ${String(v)}`);
}

/** The server's total order on values (strings by code point, as the simple collation does). */
export function compareValues(a: Value, b: Value): number {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra - rb;
  if (isNumber(a) && isNumber(b)) {
    const x = toBig(a);
    const y = toBig(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (typeof a === "string" && typeof b === "string") {
    const x = Buffer.from(a);
    const y = Buffer.from(b);
    return Buffer.compare(x, y);
  }
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b);
  // ObjectIds by their 12 bytes (their hex spelling sorts the same).
  if (a instanceof ObjectId && b instanceof ObjectId) {
    return Buffer.compare(Buffer.from(a.id), Buffer.from(b.id));
  }
  if (a instanceof Date && b instanceof Date) return a.getTime() - b.getTime();
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const c = compareValues(a[i], b[i]);
      if (c !== 0) return c;
    }
    return a.length - b.length;
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    return compareValues(Object.entries(a).flat(), Object.entries(b).flat());
  }
  return 0;
}

function getPath(doc: Value, path: string): Value {
  let cur: Value = doc;
  for (const part of path.split(".")) {
    if (!isPlainObject(cur) || !(part in cur)) return MISSING;
    cur = cur[part];
  }
  return cur;
}

function truthy(v: Value): boolean {
  return !(v === false || v === null || v === MISSING || v === 0);
}

function bsonType(v: Value): string {
  if (v === MISSING) return "missing";
  if (v === null) return "null";
  if (typeof v === "string") return "string";
  if (typeof v === "boolean") return "bool";
  if (v instanceof Date) return "date";
  if (v instanceof Long || typeof v === "bigint") return "long";
  if (typeof v === "number") return Number.isInteger(v) && Math.abs(v) < 2 ** 31 ? "int" : "double";
  if (Array.isArray(v)) return "array";
  if (isPlainObject(v)) return "object";
  throw new Error(`model has no type for ${String(v)}`);
}

function args(expr: Value, n: number, op: string): Value[] {
  if (!Array.isArray(expr) || expr.length !== n) throw new Error(`${op} takes ${n} arguments`);
  return expr;
}

/** The variables `$reduce` binds (`$$value`, `$$this`) while it evaluates its `in`. */
let scope: Record<string, Value> = {};

/** Evaluates an aggregation expression against `doc`. */
export function evaluate(expr: Value, doc: Doc): Value {
  if (typeof expr === "string") {
    if (expr === "$$REMOVE") return MISSING;
    if (expr === "$$ROOT") return doc;
    if (expr.startsWith("$$")) {
      const [name, ...rest] = expr.slice(2).split(".");
      if (name === undefined || !(name in scope)) throw new Error(`variable ${expr} not modelled`);
      const v = scope[name] as Value;
      return rest.length > 0 ? getPath(v, rest.join(".")) : v;
    }
    if (expr.startsWith("$")) return getPath(doc, expr.slice(1));
    return expr;
  }
  if (Array.isArray(expr)) return expr.map((e) => evaluate(e, doc));
  if (!isPlainObject(expr)) return expr;
  if (!isOperatorObject(expr)) {
    const out: Doc = {};
    for (const [k, v] of Object.entries(expr)) {
      const value = evaluate(v, doc);
      if (value !== MISSING) out[k] = value;
    }
    return out;
  }
  const [op, arg] = Object.entries(expr)[0] as [string, Value];
  if (Object.keys(expr).length !== 1) throw new Error(`an operator object has one key: ${op}`);
  const ev = (e: Value) => evaluate(e, doc);
  switch (op) {
    case "$literal":
      return arg;
    case "$cond": {
      const [c, then, otherwise] = args(arg, 3, op);
      return truthy(ev(c)) ? ev(then) : ev(otherwise);
    }
    case "$or":
      return (arg as Value[]).some((e) => truthy(ev(e)));
    case "$and":
      return (arg as Value[]).every((e) => truthy(ev(e)));
    case "$eq":
    case "$ne":
    case "$lt":
    case "$lte":
    case "$gt":
    case "$gte": {
      const [a, b] = args(arg, 2, op).map(ev);
      const c = compareValues(a, b);
      return { $eq: c === 0, $ne: c !== 0, $lt: c < 0, $lte: c <= 0, $gt: c > 0, $gte: c >= 0 }[op];
    }
    case "$type":
      return bsonType(ev(arg));
    case "$ifNull": {
      const [a, b] = args(arg, 2, op).map(ev);
      return a === null || a === MISSING ? b : a;
    }
    case "$min": {
      const values = (Array.isArray(arg) ? arg.map(ev) : [ev(arg)]).filter(
        (v) => v !== null && v !== MISSING,
      );
      if (values.length === 0) return null;
      return values.reduce((m, v) => (compareValues(v, m) < 0 ? v : m));
    }
    case "$max": {
      const values = (Array.isArray(arg) ? arg.map(ev) : [ev(arg)]).filter(
        (v) => v !== null && v !== MISSING,
      );
      if (values.length === 0) return null;
      return values.reduce((m, v) => (compareValues(v, m) > 0 ? v : m));
    }
    case "$add": {
      const values = (arg as Value[]).map(ev);
      // null or missing makes the sum null, as on the server.
      if (values.some((v) => v === null || v === MISSING)) return null;
      if (!values.every((v) => typeof v === "number")) throw new Error("$add of numbers only");
      return (values as number[]).reduce((a, b) => a + b, 0);
    }
    case "$reduce": {
      const { input, initialValue, in: body } = arg as Doc;
      const array = ev(input as Value);
      if (array === null || array === MISSING) return null;
      if (!Array.isArray(array)) throw new Error("$reduce of a non-array");
      let acc = ev(initialValue as Value);
      const saved = scope;
      try {
        for (const element of array) {
          scope = { ...saved, value: acc, this: element };
          acc = evaluate(body as Value, doc);
        }
      } finally {
        scope = saved;
      }
      return acc;
    }
    case "$indexOfArray": {
      const [array, value] = args(arg, 2, op).map(ev);
      if (!Array.isArray(array)) return null;
      return array.findIndex((v) => compareValues(v, value) === 0);
    }
    case "$size": {
      const a = ev(arg);
      if (!Array.isArray(a)) throw new Error("$size of a non-array");
      return a.length;
    }
    case "$setDifference": {
      const [a, b] = args(arg, 2, op).map(ev) as [Value[], Value[]];
      return a.filter((x) => !b.some((y) => compareValues(x, y) === 0));
    }
    default:
      throw new Error(`operator ${op} not modelled`);
  }
}

/** A `$set` stage: every expression reads the input document; a missing value removes the field. */
function setStage(doc: Doc, fields: Doc): Doc {
  const out: Doc = { ...doc };
  for (const [k, e] of Object.entries(fields)) {
    if (k.includes(".") || k.startsWith("$")) throw new Error(`field ${k} not modelled`);
    const v = evaluate(e, doc);
    if (v === MISSING) delete out[k];
    else out[k] = v;
  }
  return out;
}

/** The equality fields of a filter: what an upsert seeds a new document with. */
export function equalityFields(filter: Doc): Doc {
  const doc: Doc = {};
  for (const [k, v] of Object.entries(filter)) {
    if (k.startsWith("$")) continue;
    if (isOperatorObject(v)) continue;
    doc[k] = v;
  }
  return doc;
}

/**
 * An update pipeline applied to `existing`, or, on upsert, to a new document
 * seeded from the filter's equality fields.
 */
export function applyPipeline(existing: Doc | undefined, filter: Doc, pipeline: Doc[]): Doc {
  let doc = existing ? { ...existing } : equalityFields(filter);
  for (const stage of pipeline) {
    const [name, spec] = Object.entries(stage)[0] as [string, Doc];
    if (name !== "$set") throw new Error(`update stage ${name} not modelled`);
    doc = setStage(doc, spec);
  }
  for (const [k, v] of Object.entries(filter)) {
    if (!k.startsWith("$") && !isOperatorObject(v) && compareValues(doc[k], v) !== 0) {
      throw new Error(`the pipeline changed the filter's field ${k}`);
    }
  }
  return doc;
}

/** Whether `doc` matches a query filter (the operators the adapter uses). */
export function matches(doc: Doc, filter: Doc): boolean {
  return Object.entries(filter).every(([k, cond]) => {
    if (k === "$or") return (cond as Doc[]).some((f) => matches(doc, f));
    if (k === "$and") return (cond as Doc[]).every((f) => matches(doc, f));
    if (k.startsWith("$")) throw new Error(`query operator ${k} not modelled`);
    const v = getPath(doc, k);
    if (!isOperatorObject(cond)) {
      // null matches a missing field too.
      if (cond === null) return v === null || v === MISSING;
      return v !== MISSING && compareValues(v, cond) === 0;
    }
    return Object.entries(cond).every(([op, arg]) => {
      // Range operators compare within one type only (type bracketing).
      const sameType = v !== MISSING && v !== null && typeRank(v) === typeRank(arg);
      switch (op) {
        case "$in":
          return (arg as Value[]).some((x) =>
            x === null ? v === null || v === MISSING : v !== MISSING && compareValues(v, x) === 0,
          );
        case "$nin": {
          // On an array field: none of its elements (nor the array itself) is listed.
          const values = Array.isArray(v) ? [v, ...v] : [v];
          return !(arg as Value[]).some((x) =>
            values.some((y) =>
              x === null ? y === null || y === MISSING : y !== MISSING && compareValues(y, x) === 0,
            ),
          );
        }
        case "$ne":
          return arg === null
            ? v !== null && v !== MISSING
            : v === MISSING || compareValues(v, arg) !== 0;
        case "$gt":
          return sameType && compareValues(v, arg) > 0;
        case "$gte":
          return sameType && compareValues(v, arg) >= 0;
        case "$lt":
          return sameType && compareValues(v, arg) < 0;
        case "$lte":
          return sameType && compareValues(v, arg) <= 0;
        case "$elemMatch":
          // An array with an element (a document) that matches the query.
          return Array.isArray(v) && v.some((e) => isPlainObject(e) && matches(e, arg as Doc));
        default:
          throw new Error(`query operator ${op} not modelled`);
      }
    });
  });
}

/** `$sum` as the server does it: int + int stays int, a long makes a long; non-numbers are ignored. */
function sum(values: Value[]): Value {
  let total = 0n;
  let long = false;
  for (const v of values) {
    if (!isNumber(v)) continue;
    if (typeof v === "number" && !Number.isInteger(v)) throw new Error("model sums integers only");
    if (v instanceof Long || typeof v === "bigint") long = true;
    total += toBig(v);
  }
  if (total > 2n ** 63n - 1n || total < -(2n ** 63n)) return Number(total); // overflow: a double
  if (!long && total <= 2n ** 31n - 1n && total >= -(2n ** 31n)) return Number(total);
  return Long.fromBigInt(total);
}

function group(docs: Doc[], spec: Doc): Doc[] {
  const { _id, ...accumulators } = spec;
  const groups = new Map<string, { id: Value; docs: Doc[] }>();
  for (const d of docs) {
    const id = evaluate(_id, d);
    const key = JSON.stringify(id, (_k, v) => (typeof v === "bigint" ? v.toString() : v));
    const g = groups.get(key);
    if (g) g.docs.push(d);
    else groups.set(key, { id, docs: [d] });
  }
  return [...groups.values()].map(({ id, docs: members }) => {
    const out: Doc = { _id: id };
    for (const [field, acc] of Object.entries(accumulators)) {
      const [op, e] = Object.entries(acc as Doc)[0] as [string, Value];
      const values = members.map((m) => evaluate(e, m));
      if (op === "$sum") out[field] = sum(values);
      else if (op === "$addToSet") {
        const set: Value[] = [];
        for (const v of values) {
          if (v !== MISSING && !set.some((x) => compareValues(x, v) === 0)) set.push(v);
        }
        out[field] = set;
      } else throw new Error(`accumulator ${op} not modelled`);
    }
    return out;
  });
}

function project(doc: Doc, spec: Doc): Doc {
  const out: Doc = {};
  if (spec._id !== 0 && "_id" in doc) out._id = doc._id;
  for (const [k, e] of Object.entries(spec)) {
    if (k === "_id" && e === 0) continue;
    if (e === 0) throw new Error("exclusion in $project not modelled");
    const v = e === 1 || e === true ? getPath(doc, k) : evaluate(e, doc);
    if (v !== MISSING) out[k] = v;
  }
  return out;
}

/** Runs an aggregation pipeline over a collection's documents. */
export function aggregate(docs: readonly Doc[], pipeline: readonly Doc[]): Doc[] {
  let out = docs.map((d) => ({ ...d }));
  for (const stage of pipeline) {
    const [name, spec] = Object.entries(stage)[0] as [string, Doc];
    switch (name) {
      case "$match":
        out = out.filter((d) => matches(d, spec));
        break;
      case "$group":
        out = group(out, spec);
        break;
      case "$project":
        out = out.map((d) => project(d, spec));
        break;
      case "$sort":
        out = [...out].sort((a, b) => {
          for (const [k, dir] of Object.entries(spec)) {
            const c = compareValues(getPath(a, k), getPath(b, k));
            if (c !== 0) return c * (dir as number);
          }
          return 0;
        });
        break;
      case "$unwind": {
        // The short form, "$field": a document per element; no array, no document.
        const field = (spec as unknown as string).slice(1);
        out = out.flatMap((d) => {
          const items = d[field];
          return Array.isArray(items) ? items.map((item) => ({ ...d, [field]: item })) : [];
        });
        break;
      }
      case "$replaceRoot":
        out = out.map((d) => evaluate(spec.newRoot, d) as Doc);
        break;
      case "$count":
        // No document at all when nothing is counted, as the server answers.
        out = out.length > 0 ? [{ [spec as unknown as string]: out.length }] : [];
        break;
      default:
        throw new Error(`stage ${name} not modelled`);
    }
  }
  return out;
}
