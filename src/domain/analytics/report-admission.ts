/**
 * The admission rule of the fixed reports' plans (`AnalyticsEngine.report`:
 * SiteOverview, RevenueByChannel). They do not take the site's query slots
 * (ANALYTICS_QUERIES_PER_SITE), which the dashboard's Query panels need, but
 * lanes of their own: per site at most `perSite` plans run at once, at most
 * `queuedPerSite` more wait for a lane in arrival order, each at most
 * `waitMs`. A plan that finds the queue full, or whose wait runs out, is
 * refused with Query's own `too_many_requests` error (429 `rate_limited`
 * with Retry-After over REST, `resource_exhausted` over RPC). So a flood of
 * report calls for one site holds at most `perSite` of the engine's
 * connections and a bounded queue, never another site's, while the plans of
 * a few overviews at once wait briefly instead of being refused.
 */
import { errors } from "../errors.js";
import type { AnalyticsEngine } from "./query-plan.js";

/** Plans of one site that may wait for a lane: four SiteOverviews' worth (four plans each). */
export const REPORTS_QUEUED_PER_SITE = 16;

export interface ReportAdmissionOptions {
  /** Plans of one site running at once (ANALYTICS_QUERIES_PER_SITE). */
  perSite: number;
  /** Plans of one site waiting at once; the next is refused. */
  queuedPerSite: number;
  /** The longest a plan waits for a lane (ANALYTICS_REPORT_WAIT_MS). */
  waitMs: number;
}

/** A plan waiting for a lane: `admit` hands it one, `refuse` sends it away. */
interface Waiter {
  admit(): void;
  refuse(err: unknown): void;
}

/** A site's lanes: plans running, and those waiting in arrival order. */
interface Lanes {
  running: number;
  waiting: Waiter[];
}

/** `engine` with its `report` admitted by the rule above; every other method as it is. */
export function admitReports(
  engine: AnalyticsEngine,
  options: ReportAdmissionOptions,
): AnalyticsEngine {
  const sites = new Map<string, Lanes>();

  /** Resolves once the plan holds one of the site's lanes; rejects if refused. */
  const enter = (siteId: string, signal: AbortSignal | undefined): Promise<void> => {
    const lanes = sites.get(siteId) ?? { running: 0, waiting: [] };
    sites.set(siteId, lanes);
    if (lanes.running < options.perSite) {
      lanes.running += 1;
      return Promise.resolve();
    }
    if (lanes.waiting.length >= options.queuedPerSite) {
      return Promise.reject(errors.tooManyQueries());
    }
    if (signal?.aborted) return Promise.reject(errors.analyticsUnavailable(signal.reason));
    return new Promise<void>((resolve, reject) => {
      const leaveQueue = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        const i = lanes.waiting.indexOf(waiter);
        if (i >= 0) lanes.waiting.splice(i, 1);
      };
      const waiter: Waiter = {
        admit: () => {
          leaveQueue();
          resolve();
        },
        refuse: (err) => {
          leaveQueue();
          forget(siteId, lanes);
          reject(err);
        },
      };
      const timer = setTimeout(() => waiter.refuse(errors.tooManyQueries()), options.waitMs);
      // A caller that went away gives its place up (the engine answers an aborted run so too).
      const onAbort = () => waiter.refuse(errors.analyticsUnavailable(signal?.reason));
      signal?.addEventListener("abort", onAbort);
      lanes.waiting.push(waiter);
    });
  };

  /** Drops a site's entry once nothing runs or waits there. */
  const forget = (siteId: string, lanes: Lanes) => {
    if (lanes.running === 0 && lanes.waiting.length === 0) sites.delete(siteId);
  };

  /** Hands the lane to the first waiting plan, or gives it back. */
  const leave = (siteId: string) => {
    const lanes = sites.get(siteId);
    if (!lanes) return;
    const next = lanes.waiting[0];
    if (next) {
      next.admit();
      return;
    }
    lanes.running -= 1;
    forget(siteId, lanes);
  };

  return {
    ...engine,
    async report(plan, signal) {
      await enter(plan.siteId, signal);
      try {
        return await engine.report(plan, signal);
      } finally {
        leave(plan.siteId);
      }
    },
  };
}
