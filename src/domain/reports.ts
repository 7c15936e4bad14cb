/** Read operations for ReportsService (inspection, tests, the dashboard). */

import type { StoredEventReads } from "./analytics/event-reads.js";
import { revenueByChannelOf } from "./analytics/fixed-reports.js";
import type { AnalyticsEngine } from "./analytics/query-plan.js";
import type { Clock } from "./clock.js";
import { errors } from "./errors.js";
import { isPersistentVisitorId } from "./events/persistent-visitor.js";
import { createExportSlots, releasingPages } from "./export-slots.js";
import { parseRfc3339 } from "./payments/rfc3339.js";
import type { ReportsPrincipal } from "./reports-access.js";
import { buildSiteOverview, overviewPeriod, type SiteOverviewView } from "./site-overview.js";
import type {
  Attribution,
  CustomerRecord,
  CustomerVisitorLink,
  EventRecord,
  PaymentPosition,
  PaymentRecord,
  RevenueRow,
  Store,
  SubscriptionInterval,
  VisitorTouch,
} from "./store/store.js";

/** Months-per-interval factors ×12, so MRR sums stay integers until one final division. */
const PER_YEAR: Record<SubscriptionInterval, bigint> = {
  day: 365n,
  week: 52n,
  month: 12n,
  year: 1n,
};

export interface CustomerView {
  customer: CustomerRecord;
  /** `persistentId`: for a daily id stitched to a persistent visitor, that visitor's id. */
  visitors: (CustomerVisitorLink & { firstTouch?: VisitorTouch; persistentId?: string })[];
  firstTouch?: Attribution;
}

export interface RevenueView extends RevenueRow {
  netMinor: bigint;
}

export interface MrrView {
  at: number;
  rows: { currency: string; mrrMinor: bigint; subscriptions: number }[];
}

/** An optional RFC 3339 request field; `fallback` when empty. */
function timeField(name: string, value: string, fallback: number): number {
  if (value === "") return fallback;
  const ms = parseRfc3339(value);
  if (ms === undefined) {
    throw errors.invalid(`${name}: must be RFC 3339, e.g. 2024-01-15T10:30:00Z`);
  }
  return ms;
}

/** a / b rounded half-up (away from zero for halves), for non-negative b. */
function divRoundHalfUp(a: bigint, b: bigint): bigint {
  const q = a / b;
  const r = a % b;
  if (r * 2n >= b) return q + 1n;
  if (r * 2n <= -b) return q - 1n;
  return q;
}

/** Payments in a customer's journey. */
export const JOURNEY_PAYMENTS = 50;

export const LIST_EVENTS_DEFAULT = 100;
export const LIST_EVENTS_MAX = 1000;

/** What a page token carries: the position the next page starts before, versioned. */
const TOKEN_PREFIX = "e1.";

/** The opaque token of a position (base64url, so it passes in URLs and JSON as is). */
/**
 * The pages `read` gives, one read each time the consumer asks for the next
 * (a slow consumer slows the reads; one that returns the iterator ends them),
 * from no cursor until a page names no next one. Empty pages are not yielded.
 * Between two pages the event loop gets a turn (setImmediate): a store that
 * answers at once (SQLite) and a consumer that is always ready (a fast
 * socket) would otherwise chain every page in promise callbacks, and no
 * other request would be served until the export ended (issue 31).
 */
async function* pagesOf<T, C>(
  read: (cursor: C | undefined) => Promise<{ items: T[]; next?: C }>,
): AsyncGenerator<T[], void, undefined> {
  let cursor: C | undefined;
  let first = true;
  do {
    if (!first) await nextTurn();
    first = false;
    const page = await read(cursor);
    if (page.items.length > 0) yield page.items;
    cursor = page.next;
  } while (cursor !== undefined);
}

/** Resolves after the event loop has served what was waiting (I/O, timers). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function pageToken(position: number): string {
  return Buffer.from(`${TOKEN_PREFIX}${position}`).toString("base64url");
}

function positionOf(token: string): number {
  const text = Buffer.from(token, "base64url").toString();
  const n = text.startsWith(TOKEN_PREFIX) ? Number(text.slice(TOKEN_PREFIX.length)) : Number.NaN;
  if (!/^[A-Za-z0-9_-]+$/.test(token) || !Number.isSafeInteger(n) || n < 0) {
    throw errors.invalid("page_token: not a token from a ListEvents response");
  }
  return n;
}

/** Exports of one site that may run at once in a process, unless EXPORTS_PER_SITE says otherwise. */
export const DEFAULT_EXPORTS_PER_SITE = 2;

/** What a token reads (GetAccess), and the host names of the site it describes. */
export interface AccessView {
  kind: ReportsPrincipal["kind"];
  /** A key's own site; undefined for ADMIN_TOKEN, which reads every site. */
  siteId: string | undefined;
  hostnames: string[];
}

/** Events per store page of an export: what one read holds in memory and one stream message carries. */
export const EXPORT_PAGE = 100;

/** A page of events and the token of the next one ("" on the last page). */
export interface EventsPageView {
  events: EventRecord[];
  nextPageToken: string;
}

export function createReports(deps: {
  store: Store;
  clock: Clock;
  /** Exports of one site that may run at once in this process (EXPORTS_PER_SITE); default 2. */
  exportsPerSite?: number;
  /** Where stored events are read (analytics/event-reads.ts); default: the store. */
  events?: StoredEventReads;
  /** The analytics engine, read-your-writes (services.ts); absent where this process has none. */
  engine?: AnalyticsEngine;
}) {
  const { store, clock } = deps;
  const events: StoredEventReads = deps.events ?? store;
  const exportSlots = createExportSlots(deps.exportsPerSite ?? DEFAULT_EXPORTS_PER_SITE);

  /** An export's site and [from, to), checked before anything is read or sent. */
  async function exportRange(input: { siteId: string; from?: string; to?: string }) {
    const from = timeField("from", input.from ?? "", 0);
    const to = timeField("to", input.to ?? "", Number.MAX_SAFE_INTEGER);
    if (to < from) throw errors.invalid("to: must not be before from");
    if (!(await store.getSite(input.siteId))) throw errors.siteNotFound(input.siteId);
    return { siteId: input.siteId, from, to };
  }

  /** MRR per currency of a site's subscriptions at `at`. */
  async function mrrAt(siteId: string, at: number): Promise<MrrView> {
    const byCurrency = new Map<string, { yearly: bigint; subscriptions: number }>();
    for (const r of await store.mrrTotals(siteId, at)) {
      const cur = byCurrency.get(r.currency) ?? { yearly: 0n, subscriptions: 0 };
      cur.yearly += r.amountMinor * PER_YEAR[r.interval];
      cur.subscriptions += r.subscriptions;
      byCurrency.set(r.currency, cur);
    }
    return {
      at,
      rows: [...byCurrency].map(([currency, v]) => ({
        currency,
        mrrMinor: divRoundHalfUp(v.yearly, 12n),
        subscriptions: v.subscriptions,
      })),
    };
  }

  /** A customer, the visitors linked to it with their first touches, and its own first touch. */
  async function customerView(input: {
    siteId: string;
    customerId: string;
  }): Promise<CustomerView> {
    const customer = await store.getCustomer(input.siteId, input.customerId);
    if (!customer) throw errors.customerNotFound(input.customerId);
    const links = await store.getCustomerVisitors(input.siteId, input.customerId);
    const touches = new Map(
      (
        await store.getFirstTouches(
          input.siteId,
          links.map((l) => l.visitorId),
        )
      ).map((t) => [t.visitorId, t]),
    );
    // Which persistent visitor each linked daily id belongs to: one indexed read.
    const persistentOf = new Map(
      (
        await store.findStitches(
          input.siteId,
          links.map((l) => l.visitorId).filter((id) => !isPersistentVisitorId(id)),
        )
      ).map((st) => [st.visitorId, st.persistentId]),
    );
    return {
      customer,
      visitors: links.map((l) => ({
        ...l,
        firstTouch: touches.get(l.visitorId),
        persistentId: persistentOf.get(l.visitorId),
      })),
      firstTouch: customer.attribution,
    };
  }

  return {
    /**
     * A site's events with `ts` in [from, to) (RFC 3339; empty: unbounded),
     * newest first by order of arrival, one page at a time: `pageToken` is
     * the previous page's `nextPageToken` ("" for the first page).
     */
    async listEvents(input: {
      siteId: string;
      limit: number;
      from?: string;
      to?: string;
      pageToken?: string;
    }): Promise<EventsPageView> {
      const limit = input.limit === 0 ? LIST_EVENTS_DEFAULT : input.limit;
      if (!Number.isInteger(limit) || limit < 1 || limit > LIST_EVENTS_MAX) {
        throw errors.invalid(`limit must be from 1 to ${LIST_EVENTS_MAX}`);
      }
      const from = timeField("from", input.from ?? "", 0);
      const to = timeField("to", input.to ?? "", Number.MAX_SAFE_INTEGER);
      if (to < from) throw errors.invalid("to: must not be before from");
      const before = input.pageToken ? positionOf(input.pageToken) : undefined;
      if (!(await store.getSite(input.siteId))) {
        throw errors.siteNotFound(input.siteId);
      }
      const page = await events.pageEvents(input.siteId, {
        from,
        to,
        limit,
        ...(before === undefined ? {} : { before }),
      });
      return {
        events: page.events,
        nextPageToken: page.next === undefined ? "" : pageToken(page.next),
      };
    },

    /**
     * Every event of a site with `ts` in [from, to) (RFC 3339; empty:
     * unbounded), newest first by order of arrival, as pages of at most
     * EXPORT_PAGE events. The request is checked here, before anything is
     * sent; the pages are read one at a time, each only when the consumer
     * asks for it (a slow consumer slows the reads, one that stops pulling or
     * returns the iterator ends them), so memory holds one page whatever the
     * range. Events stored after the first page are newer than it: not in
     * the export.
     */
    async exportEvents(input: {
      siteId: string;
      from?: string;
      to?: string;
    }): Promise<AsyncGenerator<EventRecord[], void, undefined>> {
      const { siteId, from, to } = await exportRange(input);
      const release = exportSlots.take(siteId);
      const pages = pagesOf(async (before: number | undefined) => {
        const page = await events.pageEvents(siteId, {
          from,
          to,
          limit: EXPORT_PAGE,
          ...(before === undefined ? {} : { before }),
        });
        return { items: page.events, next: page.next };
      });
      return releasingPages(pages, release);
    },

    /**
     * Every payment of a site with `paidAt` in [from, to) (RFC 3339; empty:
     * unbounded), oldest first by (paidAt, paymentId), as pages of at most
     * EXPORT_PAGE payments read one at a time as the consumer asks (see
     * exportEvents). The request is checked before anything is read.
     */
    async exportPayments(input: {
      siteId: string;
      from?: string;
      to?: string;
    }): Promise<AsyncGenerator<PaymentRecord[], void, undefined>> {
      const { siteId, from, to } = await exportRange(input);
      const release = exportSlots.take(siteId);
      const pages = pagesOf(async (after: PaymentPosition | undefined) => {
        const page = await store.pagePayments(siteId, {
          from,
          to,
          limit: EXPORT_PAGE,
          ...(after === undefined ? {} : { after }),
        });
        return { items: page.payments, next: page.next };
      });
      return releasingPages(pages, release);
    },

    async getPayment(input: { siteId: string; paymentId: string }): Promise<PaymentRecord> {
      const p = await store.getPayment(input.siteId, input.paymentId);
      if (!p) throw errors.paymentNotFound(input.paymentId);
      return p;
    },

    getCustomer: customerView,

    /**
     * What `principal` reads, with the host names of the site it names (the
     * caller's access rule has already allowed it) or else of a key's own
     * site: what the dashboard shows a site as. An unknown named site is 404.
     */
    async access(principal: ReportsPrincipal, siteId: string): Promise<AccessView> {
      const own = principal.kind === "reports_key" ? principal.siteId : undefined;
      const described = siteId || own;
      const site = described ? await store.getSite(described) : undefined;
      if (described && !site) throw errors.siteNotFound(described);
      return { kind: principal.kind, siteId: own, hostnames: site?.hostnames ?? [] };
    },

    /** GetCustomer with the customer's most recent payments (the dashboard's journey). */
    async customerJourney(input: {
      siteId: string;
      customerId: string;
    }): Promise<CustomerView & { payments: PaymentRecord[] }> {
      const view = await customerView(input);
      const payments = await store.customerPayments(
        input.siteId,
        input.customerId,
        JOURNEY_PAYMENTS,
      );
      return { ...view, payments };
    },

    async revenueByChannel(input: {
      siteId: string;
      from: string;
      to: string;
    }): Promise<RevenueView[]> {
      const from = timeField("from", input.from, 0);
      const to = timeField("to", input.to, clock.now());
      if (to < from) throw errors.invalid("to: must not be before from");
      // The query layer's plan; a process without the engine has no second copy of its rules.
      if (!deps.engine) throw errors.analyticsNotServed();
      return revenueByChannelOf(deps.engine, input.siteId, from, to);
    },

    async mrr(input: { siteId: string; at: string }): Promise<MrrView> {
      return mrrAt(input.siteId, timeField("at", input.at, clock.now()));
    },

    /** The dashboard's view of a site over [from, to), with MRR at its end (or now, if earlier). */
    async siteOverview(input: {
      siteId: string;
      from: string;
      to: string;
    }): Promise<SiteOverviewView & { mrr: MrrView }> {
      const { from, to } = overviewPeriod((name, value) => timeField(name, value, 0), input);
      if (!(await store.getSite(input.siteId))) throw errors.siteNotFound(input.siteId);
      const [overview, mrr] = await Promise.all([
        buildSiteOverview(store, input.siteId, from, to, deps.engine),
        mrrAt(input.siteId, Math.min(to, clock.now())),
      ]);
      return { ...overview, mrr };
    },
  };
}

export type Reports = ReturnType<typeof createReports>;
