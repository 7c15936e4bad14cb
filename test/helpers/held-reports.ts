/**
 * Holds a site's fixed reports (`AnalyticsEngine.report`) beneath the
 * service's admission rule (src/domain/analytics/report-admission.ts), so a
 * test can fill the site's report lanes and know it has: pass `wrap` as the
 * test server's `wrapAnalytics`, `hold(siteId)`, make calls, `whenHeld(n)`
 * (explicit readiness: resolves once n plans hold a lane), then `release()`:
 * each held plan then runs on the real engine.
 */
import type { AnalyticsEngine } from "../../src/domain/analytics/query-plan.js";
import { BASE_TIMEOUTS, scaled } from "./timeouts.js";

export interface HeldReports {
  /** The test server's `wrapAnalytics`. */
  wrap(engine: AnalyticsEngine): AnalyticsEngine;
  /** Holds the reports of `siteId` that reach the engine from now on. */
  hold(siteId: string): void;
  /** Resolves once `n` plans are held (they hold a lane each); fails past the scaled limit. */
  whenHeld(n: number): Promise<void>;
  /** Lets every held plan run, and holds none from now on. */
  release(): void;
}

export function heldReports(): HeldReports {
  let site: string | undefined;
  const held: (() => void)[] = [];
  const watchers: (() => void)[] = [];
  return {
    wrap: (engine) => ({
      ...engine,
      async report(plan, signal) {
        if (plan.siteId === site) {
          await new Promise<void>((go) => {
            held.push(go);
            for (const w of watchers.splice(0)) w();
          });
        }
        return engine.report(plan, signal);
      },
    }),
    hold(siteId) {
      site = siteId;
    },
    async whenHeld(n) {
      const limit = scaled(BASE_TIMEOUTS.childReady);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${held.length} of ${n} reports held after ${limit} ms`)),
          limit,
        );
      });
      try {
        while (held.length < n) {
          await Promise.race([new Promise<void>((w) => watchers.push(w)), late]);
        }
      } finally {
        clearTimeout(timer);
      }
    },
    release() {
      site = undefined;
      for (const go of held.splice(0)) go();
    },
  };
}
