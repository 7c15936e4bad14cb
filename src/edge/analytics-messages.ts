/**
 * The analytics engine's answers as the proto messages QueryResponse and
 * FunnelResponse (RPC and the reports door's REST JSON build the same).
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  FunnelRequest,
  FunnelResponseSchema,
  QueryFilter,
  QueryPeriod,
  QueryRequest,
  QueryResponseSchema,
} from "../../gen/ingest/v1/reports_pb.js";
import {
  type FunnelRequestFields,
  nextPageToken,
  type QueryFilterFields,
  type QueryPeriodFields,
  type QueryRequestFields,
} from "../domain/analytics/plan-query.js";
import type {
  FunnelPlan,
  FunnelResult,
  Interval,
  MetricValue,
  QueryPlan,
  QueryResult,
} from "../domain/analytics/query-plan.js";
import { iso, money } from "./stored-payment.js";

const filterFields = (f: QueryFilter): QueryFilterFields => ({
  dimension: f.dimension,
  op: f.op,
  values: [...f.values],
});
const periodFields = (p: QueryPeriod | undefined): QueryPeriodFields | undefined =>
  p === undefined ? undefined : { fromDay: p.fromDay, toDay: p.toDay, from: p.from, to: p.to };

/** A QueryRequest message (decoded by Connect or from the REST body) as the planner's fields. */
export function queryFields(req: QueryRequest): QueryRequestFields {
  const period = periodFields(req.period);
  return {
    siteId: req.siteId,
    metrics: [...req.metrics],
    dimensions: [...req.dimensions],
    filters: req.filters.map(filterFields),
    ...(period ? { period } : {}),
    compare: req.compare,
    model: req.model,
    currency: req.currency,
    orderBy: req.orderBy.map((o) => ({ field: o.field, desc: o.desc })),
    limit: req.limit,
    pageToken: req.pageToken,
  };
}

/** A FunnelRequest message as the planner's fields. */
export function funnelFields(req: FunnelRequest): FunnelRequestFields {
  const period = periodFields(req.period);
  return {
    siteId: req.siteId,
    steps: req.steps.map((s) => ({
      kind: s.kind,
      value: s.value,
      filters: s.filters.map(filterFields),
      label: s.label,
    })),
    filters: req.filters.map(filterFields),
    ...(period ? { period } : {}),
    windowSeconds: req.windowSeconds,
    currency: req.currency,
    model: req.model,
  };
}

type MetricValueInit = NonNullable<MessageInitShape<typeof QueryResponseSchema>["totals"]>[number];

/** A metric's value as the proto MetricValue (none: no value set). */
export function metricValueMessage(v: MetricValue): MetricValueInit {
  switch (v.kind) {
    case "count":
      return { value: { case: "count", value: BigInt(v.value) } };
    case "number":
      return { value: { case: "number", value: v.value } };
    case "money":
      return { value: { case: "money", value: money(v.minor, v.currency) } };
    default:
      return {};
  }
}

const period = (i: Interval, timeZone: string) => ({ from: iso(i.from), to: iso(i.to), timeZone });

/** A query's answer. */
export function queryResponseMessage(
  plan: QueryPlan,
  result: QueryResult,
): MessageInitShape<typeof QueryResponseSchema> {
  return {
    metrics: plan.metrics,
    dimensions: plan.dimensions,
    rows: result.rows.map((r) => ({
      dimensions: r.dimensions,
      metrics: r.metrics.map(metricValueMessage),
      comparison: (r.comparison ?? []).map(metricValueMessage),
    })),
    totals: result.totals.map(metricValueMessage),
    period: period(plan.period, plan.timeZone),
    ...(plan.comparison ? { comparisonPeriod: period(plan.comparison, plan.timeZone) } : {}),
    comparisonTotals: (result.comparisonTotals ?? []).map(metricValueMessage),
    nextPageToken: result.more ? nextPageToken(plan) : "",
    model: plan.model,
  };
}

/** A funnel's answer. */
export function funnelResponseMessage(
  plan: FunnelPlan,
  result: FunnelResult,
): MessageInitShape<typeof FunnelResponseSchema> {
  return {
    steps: result.steps.map((s) => ({
      label: s.label,
      visitors: BigInt(s.visitors),
      conversionFromPrevious: s.conversionFromPrevious,
      conversionOverall: s.conversionOverall,
      ...(s.medianSecondsFromPrevious === undefined
        ? {}
        : { medianSecondsFromPrevious: s.medianSecondsFromPrevious }),
    })),
    period: period(plan.period, plan.timeZone),
    ...(result.completersNetMinor !== undefined && plan.currency
      ? { completersNetRevenue: money(result.completersNetMinor, plan.currency) }
      : {}),
    model: plan.model,
  };
}
