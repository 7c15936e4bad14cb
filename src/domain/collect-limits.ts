/**
 * The per-site ceiling of the public collect door: how many events a minute
 * `POST /api/v1/collect` accepts for one site, whoever sends them. Anyone who
 * knows a site id may call that door, so without a ceiling a few thousand
 * requests from rotating addresses would use up the account's monthly
 * allowance; the key-authenticated doors are not limited by it. The default
 * follows the plan: a burst the size of the monthly allowance ÷ 2,000, never
 * below 600 events a minute; an operator may set a site's own
 * (`collect_per_minute`, the admin CLI's `site set-collect-limit`).
 * What an attacker can still do, with the arithmetic: docs/security.md.
 */
import { errors } from "./errors.js";
import { ALLOWANCES, type Plan } from "./plans.js";
import type { Store } from "./store/store.js";

/** No plan's default is below this many events a minute. */
export const COLLECT_FLOOR_PER_MINUTE = 600;
/** The default burst is the plan's monthly allowance divided by this. */
export const COLLECT_ALLOWANCE_DIVISOR = 2_000;
/** The largest per-site setting. */
export const MAX_COLLECT_PER_MINUTE = 1_000_000;

/** The message of a setting that is not a whole number in range. */
export const COLLECT_LIMIT_MESSAGE = `per_minute must be a whole number from 1 to ${MAX_COLLECT_PER_MINUTE}, or 0 for the plan's default`;

/** The plan's default ceiling, in events a minute. */
export function defaultCollectPerMinute(plan: Plan): number {
  return Math.max(
    COLLECT_FLOOR_PER_MINUTE,
    Math.floor(ALLOWANCES[plan].included / COLLECT_ALLOWANCE_DIVISOR),
  );
}

/** The ceiling in force for a site: its own setting, else its plan's default. */
export function collectPerMinuteOf(site: { collectPerMinute?: number }, plan: Plan): number {
  return site.collectPerMinute ?? defaultCollectPerMinute(plan);
}

/**
 * Where the ceilings are counted: token buckets that hold across WORKERS
 * (src/cluster/rate-limiter.ts). `take` spends `cost` tokens of a bucket of
 * `perMinute`, or none.
 */
export interface CollectAllowance {
  take(
    key: string,
    cost: number,
    perMinute: number,
  ): Promise<{ ok: true } | { ok: false; retryAfterSeconds: number }>;
}

/** A site's setting as stored: undefined follows the plan. */
export interface SiteCollectLimit {
  siteId: string;
  collectPerMinute: number | undefined;
}

/** Setting a site's ceiling: one function for AdminService and the admin CLI. */
export function createCollectLimits(deps: { store: Pick<Store, "setCollectPerMinute"> }) {
  const { store } = deps;
  return {
    /**
     * Sets a site's ceiling to `perMinute` events (1 to MAX_COLLECT_PER_MINUTE),
     * or back to its plan's default with 0. An operator setting, like the plan.
     */
    async setSiteCollectLimit(input: {
      siteId: string;
      perMinute: number;
    }): Promise<SiteCollectLimit> {
      const { siteId, perMinute } = input;
      if (!siteId) throw errors.invalid("site_id is required");
      if (!Number.isSafeInteger(perMinute) || perMinute < 0 || perMinute > MAX_COLLECT_PER_MINUTE) {
        throw errors.invalid(COLLECT_LIMIT_MESSAGE);
      }
      const value = perMinute === 0 ? undefined : perMinute;
      if (!(await store.setCollectPerMinute(siteId, value))) throw errors.siteNotFound(siteId);
      return { siteId, collectPerMinute: value };
    },
  };
}

export type CollectLimits = ReturnType<typeof createCollectLimits>;
