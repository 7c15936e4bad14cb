/** Reading providers' JSON payloads without trusting their shape. */

export type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The object at `path` (e.g. `data.object`), or an empty one. */
export function obj(v: unknown, ...path: string[]): Obj {
  let cur: unknown = v;
  for (const key of path) cur = isObj(cur) ? cur[key] : undefined;
  return isObj(cur) ? cur : {};
}

/** A non-empty string, or undefined. */
export function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** A finite number, or undefined. */
export function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

/** An array's object elements. */
export function list(v: unknown): Obj[] {
  return Array.isArray(v) ? v.filter(isObj) : [];
}

/** The id of a field that is either an id or an expanded object with `id`. */
export function idOf(v: unknown): string | undefined {
  return str(v) ?? (isObj(v) ? str(v.id) : undefined);
}

/** The string values of an object (providers' metadata), or undefined when there are none. */
export function stringValues(v: unknown): Record<string, string> | undefined {
  if (!isObj(v)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(v)) {
    if (typeof value === "string") out[k] = value;
    else if (typeof value === "number" || typeof value === "boolean") out[k] = String(value);
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Drops undefined values, so a Payment body carries only what is known. */
export function compact<T extends Obj>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** The attribution keys every provider's metadata uses. */
export const VISITOR_KEY = "ingest_visitor_id";
export const USER_KEY = "ingest_user_id";

/** visitor_id and user_id from metadata carrying the ingest keys. */
export function attributionOf(metadata: unknown): { visitor_id?: string; user_id?: string } {
  const m = obj(metadata);
  return compact({ visitor_id: str(m[VISITOR_KEY]), user_id: str(m[USER_KEY]) });
}
