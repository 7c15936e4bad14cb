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

/**
 * What a write changed, when it says so ({@link WriteGeneration.scoped}): per
 * site, the earliest event time at or after which its events and visits may
 * differ (an event appended or deleted at that time or later, a visit whose
 * start is at that time or later re-derived); every other site, and every
 * other table, as they were. A write without one may have changed anything.
 */
export interface WriteScope {
  readonly sites: Map<string, number>;
}

/** The generation and whether a write is in progress. */
export interface WriteGeneration {
  /** Moves when a write starts or ends. */
  readonly value: number;
  /** Whether a call on the writer has started and not yet ended. */
  readonly writing: boolean;
  /** Moves the generation (a write not made through a watched object: a rewrite's swap). */
  bump(): void;
  /**
   * Calls `listener` each time the generation moves (synchronously: keep it
   * short), with the scope of the write that moved it (undefined: anything;
   * a scoped write's scope is complete only once the write ended).
   */
  onChange(listener: (scope: WriteScope | undefined) => void): void;
  /**
   * Runs `write` (one write: the calls it makes on watched objects) with its
   * moves recorded as changing only what `scope` names. The writer fills
   * `scope` in as it learns it, before `write` ends: read it only once no
   * write is in progress.
   */
  scoped<T>(scope: WriteScope, write: () => Promise<T>): Promise<T>;
  /**
   * What the writes that moved the generation past `since` may have changed:
   * per site the earliest event time (the sites not named: nothing), or
   * undefined when one of them did not say (or `since` is older than the moves
   * remembered). Only meaningful while no write is in progress.
   */
  changedSince(since: number): Map<string, number> | undefined;
  /**
   * `target` with each method call counted as a write: its start and its end
   * (a promise's settling) move the generation; an object it returns (an
   * appender, a prepared statement) is watched too. The methods are wrapped
   * on the object itself (no proxy in the way of every property read), all
   * but an appender's `append…` ones: those fill the appender's buffer, and
   * rows reach the table (and, outside a transaction, become visible) only in
   * `endRow`, `flush…` or `close…`, which are watched. The feed appends tens
   * of values per event, so they stay plain calls.
   */
  watch<T extends object>(target: T): T;
}

/** A class instance (an appender, a statement, a result), not plain data. */
const isInstance = (x: unknown): x is object =>
  typeof x === "object" &&
  x !== null &&
  !(x instanceof Promise) &&
  !Array.isArray(x) &&
  Object.getPrototypeOf(x) !== Object.prototype;

/** The method names of each class seen, found once: the writer returns a result per statement. */
const namesByPrototype = new WeakMap<object, string[]>();

/** The names of the methods `target`'s classes define. */
function methodNames(target: object): string[] {
  const proto = Object.getPrototypeOf(target) as object;
  const known = namesByPrototype.get(proto);
  if (known) return known;
  const names = new Set<string>();
  for (let p = proto; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const name of Object.getOwnPropertyNames(p)) {
      const d = Object.getOwnPropertyDescriptor(p, name);
      if (name !== "constructor" && typeof d?.value === "function") names.add(name);
    }
  }
  const list = [...names];
  namesByPrototype.set(proto, list);
  return list;
}

/**
 * Runs of moves remembered for {@link WriteGeneration.changedSince}: one per
 * write (a feed's batch moves the generation twice per appended row, all
 * under one scope), so the moves of the last thousand writes or so.
 */
const RUNS_KEPT = 1_024;

/** Creates a generation at 0 with no write in progress. */
export function createWriteGeneration(): WriteGeneration {
  let value = 0;
  let inProgress = 0;
  const listeners: ((scope: WriteScope | undefined) => void)[] = [];
  /** The scope of the write in progress, if it said one. */
  let active: WriteScope | undefined;
  let scopedWrites = 0;
  /**
   * The remembered moves as runs under one scope (undefined: anything): a
   * run holds the moves after the previous run's `through` up to its own.
   */
  const runs: { through: number; scope: WriteScope | undefined }[] = [];
  /** The moves up to this value are forgotten. */
  let forgotten = 0;
  const move = (scope: WriteScope | undefined) => {
    value += 1;
    const last = runs[runs.length - 1];
    // A batch's thousands of moves extend one run: each move costs the same whatever came before.
    if (last !== undefined && last.scope === scope) last.through = value;
    else {
      runs.push({ through: value, scope });
      if (runs.length > RUNS_KEPT) forgotten = (runs.shift() as { through: number }).through;
    }
    for (const l of listeners) l(scope);
  };
  const bump = () => move(active);
  const watched = new WeakSet<object>();
  const watch = <T extends object>(target: T): T => {
    if (watched.has(target)) return target;
    watched.add(target);
    const ended = (result: unknown) => {
      inProgress -= 1;
      bump();
      return isInstance(result) ? watch(result) : result;
    };
    for (const name of methodNames(target)) {
      if (name.startsWith("append")) continue;
      const f = (target as Record<string, (...a: unknown[]) => unknown>)[name];
      if (typeof f !== "function") continue;
      Object.defineProperty(target, name, {
        configurable: true,
        writable: true,
        value: (...args: unknown[]) => {
          bump();
          inProgress += 1;
          let result: unknown;
          try {
            result = f.apply(target, args);
          } catch (err) {
            ended(undefined);
            throw err;
          }
          if (!(result instanceof Promise)) return ended(result);
          return result.then(ended, (err: unknown) => {
            ended(undefined);
            throw err;
          });
        },
      });
    }
    return target;
  };
  return {
    get value() {
      return value;
    },
    get writing() {
      return inProgress > 0;
    },
    // A move not made through a watched object (a rewrite's swap) may change anything.
    bump: () => move(undefined),
    onChange(listener) {
      listeners.push(listener);
    },
    async scoped(scope, write) {
      // Two writes at once (none does: the feed's batches run one by one on the
      // writer) could not be told apart: their moves then count as anything.
      scopedWrites += 1;
      active = scopedWrites === 1 && inProgress === 0 ? scope : undefined;
      try {
        return await write();
      } finally {
        scopedWrites -= 1;
        active = undefined;
      }
    },
    changedSince(since) {
      if (since < forgotten) return undefined;
      const changed = new Map<string, number>();
      // The runs holding a move past `since`: the last ones.
      for (let i = runs.length - 1; i >= 0; i--) {
        const run = runs[i] as (typeof runs)[number];
        if (run.through <= since) break;
        if (run.scope === undefined) return undefined;
        for (const [site, at] of run.scope.sites) {
          changed.set(site, Math.min(at, changed.get(site) ?? Number.POSITIVE_INFINITY));
        }
      }
      return changed;
    },
    watch,
  };
}
