/**
 * The analytics application: a `Query` or `Funnel` request's fields, checked
 * and planned (plan-query.ts) against the site, then answered by the engine
 * (the DuckDB adapter, src/store/duckdb/). Both doors (RPC and REST) call it.
 */
import { errors } from "../errors.js";
import type { Store } from "../store/store.js";
import {
  type FunnelRequestFields,
  planFunnel,
  planQuery,
  type QueryRequestFields,
} from "./plan-query.js";
import type {
  AnalyticsEngine,
  FunnelPlan,
  FunnelResult,
  QueryPlan,
  QueryResult,
} from "./query-plan.js";

export interface AnalyticsApp {
  query(
    fields: QueryRequestFields,
    signal?: AbortSignal,
  ): Promise<{ plan: QueryPlan; result: QueryResult }>;
  funnel(
    fields: FunnelRequestFields,
    signal?: AbortSignal,
  ): Promise<{ plan: FunnelPlan; result: FunnelResult }>;
}

/**
 * Creates the application. Without an engine (a MongoDB store, or a worker
 * that does not own the analytics file) a valid request answers unavailable.
 */
export function createAnalyticsApp(deps: {
  store: Pick<Store, "getSite">;
  engine: AnalyticsEngine | undefined;
}): AnalyticsApp {
  const site = async (siteId: string) => {
    const s = await deps.store.getSite(siteId);
    if (!s) throw errors.siteNotFound(siteId);
    return s;
  };
  const engine = () => {
    if (!deps.engine) throw errors.analyticsNotServed();
    return deps.engine;
  };
  return {
    async query(fields, signal) {
      const plan = planQuery(fields, { site: await site(fields.siteId) });
      return { plan, result: await engine().query(plan, signal) };
    },
    async funnel(fields, signal) {
      const plan = planFunnel(fields, { site: await site(fields.siteId) });
      return { plan, result: await engine().funnel(plan, signal) };
    },
  };
}
