/**
 * Readiness: whether this process can serve writes, i.e. its store answers
 * and it is not shutting down. One probe feeds GET /readyz, the gRPC health
 * service (Check and Watch) and the readiness metric, so they never disagree.
 */

export interface Readiness {
  /** Pings the store (with a time limit) and records the answer; false while closing. */
  check(): Promise<boolean>;
  /** The last recorded answer; undefined before the first check. */
  readonly last: boolean | undefined;
  /**
   * Calls `listener` whenever a check records a different answer, and when
   * shutdown starts; returns the unsubscribe.
   */
  onChange(listener: (ready: boolean) => void): () => void;
  /** From now on the process is not ready (graceful shutdown started). */
  markClosing(): void;
  readonly closing: boolean;
}

export function createReadiness(options: {
  ping(): Promise<unknown>;
  /** How long a ping may take before the store counts as unreachable. */
  timeoutMs: number;
}): Readiness {
  let last: boolean | undefined;
  let closing = false;
  const listeners = new Set<(ready: boolean) => void>();

  const record = (ready: boolean) => {
    const changed = ready !== last;
    last = ready;
    if (changed) for (const l of [...listeners]) l(ready);
    return ready;
  };

  return {
    async check() {
      if (closing) return record(false);
      let ok: boolean;
      try {
        await withTimeout(options.ping(), options.timeoutMs);
        ok = true;
      } catch {
        ok = false;
      }
      // Shutdown may have started while the ping was in flight.
      return record(ok && !closing);
    },
    get last() {
      return last;
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    markClosing() {
      closing = true;
      last = false;
      // Every listener hears it, even when the store was already unreachable.
      for (const l of [...listeners]) l(false);
    },
    get closing() {
      return closing;
    },
  };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("timeout")), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
