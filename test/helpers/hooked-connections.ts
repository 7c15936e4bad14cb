/**
 * Steps into the statements an engine runs: every connection a store opens
 * passes each statement's text through `rewrite` and, once it ran, calls
 * `after` with it (a write landing between two statements of a read).
 */
import type { DuckDBConnection } from "@duckdb/node-api";

/** What a hooked connection does around each statement. */
export interface StatementHooks {
  /** The text run instead of `sql`. */
  rewrite?(sql: string): string;
  /** Called once `sql` ran, before its caller goes on. */
  after?(sql: string): Promise<void>;
}

/** Makes `store`'s connections hooked by `hooks` (its `connect` replaced). */
export function hookConnections(
  store: { connect(): Promise<DuckDBConnection> },
  hooks: StatementHooks,
): void {
  const connect = store.connect.bind(store);
  const rewrite = hooks.rewrite ?? ((sql: string) => sql);
  store.connect = async () => {
    const conn = await connect();
    const hooked =
      <T>(call: (sql: string, values?: never) => Promise<T>) =>
      async (sql: string, values?: never) => {
        const done = await call(rewrite(sql), values);
        await hooks.after?.(sql);
        return done;
      };
    return Object.assign(Object.create(conn), {
      run: hooked(conn.run.bind(conn)),
      runAndReadAll: hooked(conn.runAndReadAll.bind(conn)),
      closeSync: () => conn.closeSync(),
      interrupt: () => conn.interrupt(),
    }) as DuckDBConnection;
  };
}
