/**
 * The analytics store's write generation: a number that changes whenever the
 * data may have changed. Every write reaches DuckDB through the store's one
 * writer connection (the feeds' batches, erasures, retention, backups), so
 * the writer is watched: each call on it, or on an appender or statement it
 * made, moves the generation when it starts and again when it ends, and a
 * rewrite's swap moves it too. A read that saw the same generation before it
 * started and after it ended, with no write in progress at either end, saw
 * the data of that generation (read-memo.ts keeps such answers for the
 * generation's other reads).
 */

/** The generation and whether a write is in progress. */
export interface WriteGeneration {
  /** Moves when a write starts or ends. */
  readonly value: number;
  /** Whether a call on the writer has started and not yet ended. */
  readonly writing: boolean;
  /** Moves the generation (a write not made through a watched object: a rewrite's swap). */
  bump(): void;
  /**
   * `target` with each method call counted as a write: its start and its end
   * (a promise's settling) move the generation; an object it returns (an
   * appender, a prepared statement) is watched too.
   */
  watch<T extends object>(target: T): T;
}

/** Creates a generation at 0 with no write in progress. */
export function createWriteGeneration(): WriteGeneration {
  let value = 0;
  let inProgress = 0;
  const bump = () => {
    value += 1;
  };
  // Class instances only (an appender, a statement, a result): not plain data.
  const watched = (result: unknown): unknown =>
    typeof result === "object" &&
    result !== null &&
    !(result instanceof Promise) &&
    !Array.isArray(result) &&
    Object.getPrototypeOf(result) !== Object.prototype
      ? watch(result)
      : result;
  const watch = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(obj, prop) {
        const f = Reflect.get(obj, prop, obj) as unknown;
        if (typeof f !== "function") return f;
        return (...args: unknown[]) => {
          bump();
          inProgress += 1;
          let result: unknown;
          try {
            result = (f as (...a: unknown[]) => unknown).apply(obj, args);
          } catch (err) {
            inProgress -= 1;
            bump();
            throw err;
          }
          if (!(result instanceof Promise)) {
            inProgress -= 1;
            bump();
            return watched(result);
          }
          return result.then(
            (r: unknown) => {
              inProgress -= 1;
              bump();
              return watched(r);
            },
            (err: unknown) => {
              inProgress -= 1;
              bump();
              throw err;
            },
          );
        };
      },
    });
  return {
    get value() {
      return value;
    },
    get writing() {
      return inProgress > 0;
    },
    bump,
    watch,
  };
}
