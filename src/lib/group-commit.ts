/**
 * Group commit: many callers' writes share one durable store write.
 *
 * Callers `submit` an item and wait; a writer takes up to `batchMax`
 * waiting items at a time, commits them together and settles each caller
 * with its own result. While a batch is being written the next one
 * gathers, so under load batches grow by themselves; when idle, a lone item
 * waits at most `flushMs`. With `inFlight` above 1, the next batch starts
 * while earlier ones still wait for their commit to be durable (a store
 * whose commits apply in call order and then wait for a disk sync): batches
 * start in order, and their commits may finish in any order. Capacity
 * bounds the items waiting or being written, so memory stays bounded and
 * callers learn at once when it is full.
 */

export class QueueFullError extends Error {
  override readonly name = "QueueFullError";
}

/** How a group-commit queue is sized and paced: the settings an application passes on. */
export interface QueueSettings {
  /** Most weight (e.g. events) waiting or being written at once. */
  capacity: number;
  /** Most items in one batch. */
  batchMax: number;
  /** How long a batch may wait to gather more items. 0 writes on the next turn. */
  flushMs: number;
  /** Batches being written at once (default 1: each starts after the previous one finished). */
  inFlight?: number;
  /** Told of the load and of every batch written (metrics); optional. */
  observer?: GroupCommitObserver;
}

export interface GroupCommitOptions<T, R> extends QueueSettings {
  /** Writes a batch durably; returns one result per item, in order. */
  commit(items: T[]): Promise<R[]>;
}

/** What a group commit reports as it works, for metrics. */
export interface GroupCommitObserver {
  /** The weight waiting or being written changed to `load`. */
  load(load: number): void;
  /** A batch of `size` items was written (`ok`) or failed, in `seconds`. */
  batch(size: number, seconds: number, ok: boolean): void;
}

export interface GroupCommit<T, R> {
  /** Queues an item; resolves after its batch is durably written. Throws QueueFullError at once when full. */
  submit(item: T, weight?: number): Promise<R>;
  /** Resolves when everything submitted so far is written (or failed). */
  drain(): Promise<void>;
  /** Weight currently waiting or being written. */
  readonly load: number;
}

interface Pending<T, R> {
  item: T;
  weight: number;
  resolve(result: R): void;
  reject(err: unknown): void;
}

export function createGroupCommit<T, R>(options: GroupCommitOptions<T, R>): GroupCommit<T, R> {
  const { capacity, batchMax, flushMs, commit, observer } = options;
  const inFlight = Math.max(1, options.inFlight ?? 1);
  let waiting: Pending<T, R>[] = [];
  let load = 0;
  // Batches being written.
  let writing = 0;
  let timer: NodeJS.Timeout | undefined;
  let idle: (() => void)[] = [];

  const schedule = () => {
    if (writing >= inFlight || timer || waiting.length === 0) return;
    if (waiting.length >= batchMax || flushMs === 0) {
      timer = setTimeout(run, 0);
    } else {
      timer = setTimeout(run, flushMs);
    }
  };

  const run = () => {
    timer = undefined;
    if (writing >= inFlight || waiting.length === 0) return;
    const batch = waiting.slice(0, batchMax);
    waiting = waiting.slice(batch.length);
    writing += 1;
    const written = writeBatch(batch);
    // Room for another batch: the items left behind gather for it.
    schedule();
    void written.finally(() => {
      writing -= 1;
      if (waiting.length > 0) {
        // These items already waited for a write: no flush delay, only a turn
        // of the event loop so requests read meanwhile join them.
        setImmediate(runNow);
      } else if (writing === 0) {
        const done = idle;
        idle = [];
        for (const d of done) d();
      }
    });
  };

  // Starts a batch at once, instead of at the gathering timer.
  const runNow = () => {
    if (timer) {
      clearTimeout(timer);
      timer = undefined;
    }
    run();
  };

  const writeBatch = async (batch: Pending<T, R>[]) => {
    const started = performance.now();
    let ok = false;
    try {
      const results = await commit(batch.map((p) => p.item));
      ok = true;
      for (const [i, p] of batch.entries()) p.resolve(results[i] as R);
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      for (const p of batch) load -= p.weight;
      observer?.batch(batch.length, (performance.now() - started) / 1000, ok);
      observer?.load(load);
    }
  };

  return {
    submit(item, weight = 1) {
      if (load + weight > capacity) return Promise.reject(new QueueFullError("queue is full"));
      load += weight;
      observer?.load(load);
      return new Promise<R>((resolve, reject) => {
        waiting.push({ item, weight, resolve, reject });
        if (waiting.length >= batchMax && timer && writing < inFlight) {
          clearTimeout(timer);
          timer = undefined;
        }
        schedule();
      });
    },
    drain() {
      if (writing === 0 && waiting.length === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idle.push(resolve));
    },
    get load() {
      return load;
    },
  };
}
