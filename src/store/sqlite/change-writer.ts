/**
 * Applies the domain's record changes (src/domain/store/patches.ts) in
 * SQLite: one upsert per change, no read first. The row inserted is
 * `setOnInsert` and `set` together; on conflict, each column is replaced by
 * the inserted value exactly when its field is in `set`, and kept otherwise.
 * The rules (which patch field goes where) stay in the domain; this only
 * says how a change is written.
 */
import type { Change } from "../../domain/store/patches.js";
import type { Db } from "./open-sqlite.js";

/** A record field's column, and how its value is stored (as is when no `toSql`). */
export interface ColumnOf<F> {
  field: keyof F & string;
  column: string;
  toSql?: (value: never) => unknown;
}

/** A writer of changes of one table's rows, keyed by two columns. */
export function createChangeWriter<F extends object>(
  db: Db,
  table: string,
  keys: readonly [string, string],
  columns: readonly ColumnOf<F>[],
): (key: readonly [string, string], change: Change<F>) => void {
  const all = [...keys, ...columns.map((c) => c.column)];
  // Positional parameters, in the text's order: the row, then one flag per
  // column (is the field in `set`).
  const upsert = db.prepare(
    `INSERT INTO ${table} (${all.join(", ")}) VALUES (${all.map(() => "?").join(", ")})
     ON CONFLICT (${keys.join(", ")}) DO UPDATE SET ${columns
       .map((c) => `${c.column} = CASE WHEN ? THEN excluded.${c.column} ELSE ${c.column} END`)
       .join(", ")}`,
  );
  return (key, change) => {
    const row: Record<string, unknown> = { ...change.setOnInsert, ...change.set };
    const set = change.set as Record<string, unknown>;
    const params: unknown[] = [...key];
    for (const c of columns) {
      const v = row[c.field];
      params.push(v === undefined ? null : c.toSql ? c.toSql(v as never) : v);
    }
    for (const c of columns) params.push(set[c.field] === undefined ? 0 : 1);
    upsert.run(...params);
  };
}
