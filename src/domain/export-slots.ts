/**
 * How many exports of one site may run at once in a process, and the pages
 * of a running export. An export reads a site's whole range a page at a
 * time; a few in parallel are useful, many are a way to keep the store and
 * the event loop busy for everyone (issue 31), so past `perSite`
 * (EXPORTS_PER_SITE) another export of that site is refused with a
 * `too_many_requests` error (429 `rate_limited` with Retry-After over REST,
 * `resource_exhausted` over RPC) until one ends. A slot is held from the
 * request until its pages end, fail or are returned (the client went away),
 * whichever comes first, and released exactly once.
 */
import { errors } from "./errors.js";

/** Seconds a refused export is told to wait: exports last seconds to minutes. */
export const EXPORT_RETRY_AFTER_S = 10;

/** The slots of every site in this process. */
export interface ExportSlots {
  /** Takes one of the site's slots, or throws the `too_many_requests` error; returns its release. */
  take(siteId: string): () => void;
  /** Exports running now for a site (tests, diagnostics). */
  running(siteId: string): number;
}

export function createExportSlots(perSite: number): ExportSlots {
  const running = new Map<string, number>();
  return {
    take(siteId) {
      const n = running.get(siteId) ?? 0;
      if (n >= perSite) throw errors.tooManyExports(perSite, EXPORT_RETRY_AFTER_S);
      running.set(siteId, n + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (running.get(siteId) ?? 1) - 1;
        if (left > 0) running.set(siteId, left);
        else running.delete(siteId);
      };
    },
    running: (siteId) => running.get(siteId) ?? 0,
  };
}

/**
 * An export's pages: `pages`, with `release` called once when they end, fail
 * or are returned. A plain iterator rather than a generator, because a
 * generator that was never started runs no `finally` when it is returned,
 * and a client may go away before the first page.
 */
export function releasingPages<T>(
  pages: AsyncGenerator<T[], void, undefined>,
  release: () => void,
): AsyncGenerator<T[], void, undefined> {
  const it: AsyncGenerator<T[], void, undefined> = {
    async next() {
      try {
        const r = await pages.next();
        if (r.done) release();
        return r;
      } catch (err) {
        release();
        throw err;
      }
    },
    async return(value) {
      release();
      return pages.return(value);
    },
    async throw(err) {
      release();
      return pages.throw(err);
    },
    [Symbol.asyncIterator]() {
      return it;
    },
  };
  return it;
}
