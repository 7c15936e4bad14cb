/**
 * An analytics store as the engine sees it, with each statement the engine
 * sends on a query's connection handed to `record` once it ends:
 * `{ sql, values, ms }` (the benches that time or profile the engine's SQL).
 * The store's write generation is read through, so the engine's read memo
 * follows the real store's writes.
 */
export function recordingStore(analytics, record) {
  return {
    get generation() {
      return analytics.generation;
    },
    get writing() {
      return analytics.writing;
    },
    onGeneration: (listener) => analytics.onGeneration(listener),
    changedSince: (since) => analytics.changedSince(since),
    connect: async () => {
      const conn = await analytics.connect();
      return new Proxy(conn, {
        get(target, prop) {
          const f = Reflect.get(target, prop);
          if (prop === "runAndReadAll" || prop === "run") {
            return async (sql, values) => {
              const started = performance.now();
              try {
                return await f.call(target, sql, values);
              } finally {
                record({ sql, values, ms: performance.now() - started });
              }
            };
          }
          return typeof f === "function" ? f.bind(target) : f;
        },
      });
    },
  };
}
