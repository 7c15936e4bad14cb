/**
 * What the app reports as it works, for metrics: the hooks createApp calls.
 * No Prometheus here, so a server without METRICS_PORT never loads
 * prom-client: it runs with {@link noopObserver}. src/metrics/metrics.ts is
 * the Prometheus implementation.
 */
import { createContextKey, type Interceptor } from "@connectrpc/connect";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { EventsApp } from "../domain/events/events-app.js";
import type { GroupCommitObserver } from "../lib/group-commit.js";

/** Why events were not stored: the `reason` label of ingest_events_dropped_total. */
export type DropReason =
  | "bot"
  | "quota"
  | "invalid"
  | "rate_limit"
  | "collect_limit"
  | "unavailable"
  | "rejected";

/**
 * What became of a provider event: the `outcome` label of
 * ingest_connector_events_total; `refund_exceeds_charge` is a verified event
 * refused because its refunds and chargebacks would exceed their charge.
 */
export type ConnectorEventOutcome = "applied" | "duplicate" | "ignored" | "refund_exceeds_charge";

/** Which of the collect door's limits refused a request: the `limit` label of ingest_collect_refused_total. */
export type CollectLimit = "client" | "site";

export type Protocol = "rest" | "connect" | "grpc" | "grpc-web";

export interface Observer {
  /** Counts requests by route, protocol and status, and times them. */
  observeHttp(app: FastifyInstance): void;
  /** Records each RPC's real code, which gRPC sends in trailers Fastify does not see. */
  readonly rpcInterceptor: Interceptor;
  /** The slot where the interceptor leaves a request's code: put it in the RPC's context values. */
  rpcSlot(request: FastifyRequest): RpcSlot;
  /** The observer of a group-commit queue (`events` or `payments`). */
  queue(name: string): GroupCommitObserver;
  /** Wraps the events application to count events accepted and dropped by reason. */
  observeEvents(events: EventsApp): EventsApp;
  /** Counts a collect request refused by its per-client limit or the site's ceiling (429). */
  collectRefused(limit: CollectLimit): void;
  /** Told of each failed store call. */
  storeError(operation: string): void;
  /** Counts raw events the retention pruner removed. */
  eventsPruned(count: number): void;
  /** Told of each verified provider event a connector received, by what became of it. */
  connectorEvent(provider: string, outcome: ConnectorEventOutcome): void;
  /** Readiness at scrape time (1 ready, 0 not). */
  setReadinessProbe(check: () => Promise<boolean>): void;
}

/** Where the interceptor leaves an RPC's code for the response hook. */
export interface RpcSlot {
  code?: string;
}

declare module "fastify" {
  interface FastifyRequest {
    /** The RPC's slot, set by `rpcSlot` when metrics observe the server; null otherwise. */
    rpcSlot: RpcSlot | null;
  }
}

/** The context value carrying a request's {@link RpcSlot}. */
export const rpcSlotKey = createContextKey<RpcSlot | undefined>(undefined);

/** Observes nothing: the app's default, when no metrics are served. */
export const noopObserver: Observer = {
  observeHttp() {},
  rpcInterceptor: (next) => next,
  rpcSlot: () => ({}),
  queue: () => ({ load() {}, batch() {} }),
  observeEvents: (events) => events,
  collectRefused() {},
  storeError() {},
  eventsPruned() {},
  connectorEvent() {},
  setReadinessProbe() {},
};
