/**
 * Support of the store contract (test/store/contract/): fixed times, ids no
 * other test uses, and builders of the records the port exchanges. Tests
 * share one store per suite and never reuse ids (see `uid`), so they do not
 * depend on each other or on their order.
 */
import type {
  AccountRecord,
  ApiKeyRecord,
  EventGroup,
  EventRecord,
  IdentityLink,
  PaymentPage,
  PaymentRecord,
  PaymentWrite,
  RevenueRow,
  SiteRecord,
  Store,
  VisitorTouch,
} from "../../src/store/port.js";

/** 2025-06-01T00:00:00Z: a fixed base time, so expected values are exact. */
export const T0 = Date.UTC(2025, 5, 1);
export const MONTH = "2025-06";
export const MAX_SAFE = Number.MAX_SAFE_INTEGER; // 9007199254740991

let counter = 0;
/** An id no other test (or earlier run against the same database) uses. */
export function uid(prefix: string): string {
  counter += 1;
  return `${prefix}_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}_${counter}`;
}

let dayCounter = 0;
/** A UTC day (`YYYY-MM-DD`) no other test uses: days counted from a random start in 2100-2199. */
export const DAY_BASE = Date.UTC(2100 + Math.floor(Math.random() * 99), 0, 1);
export function uniqueDay(): string {
  dayCounter += 1;
  return new Date(DAY_BASE + dayCounter * 86_400_000).toISOString().slice(0, 10);
}

export function event(siteId: string, name: string, over: Partial<EventRecord> = {}): EventRecord {
  return {
    siteId,
    name,
    url: `https://example.com/${name}`,
    ts: T0,
    receivedAt: T0,
    visitorId: "vis_1",
    ...over,
  };
}

export function group(
  accountId: string,
  events: EventRecord[],
  options: {
    ceiling: number;
    countable?: number;
    links?: IdentityLink[];
    month?: string;
    touches?: VisitorTouch[];
  },
): EventGroup {
  const g: EventGroup = {
    accountId,
    month: options.month ?? MONTH,
    ceiling: options.ceiling,
    countable: options.countable ?? events.length,
    events,
    links: options.links ?? [],
  };
  if (options.touches) g.touches = options.touches;
  return g;
}

/** A candidate first touch: non-internal organic search at T0 unless told otherwise. */
export function touch(
  siteId: string,
  visitorId: string,
  over: Partial<VisitorTouch> = {},
): VisitorTouch {
  return {
    siteId,
    visitorId,
    ts: T0,
    internal: false,
    channel: "Organic Search",
    source: "google",
    medium: "organic",
    campaign: "spring",
    landingPage: "https://example.com/pricing",
    ...over,
  };
}

/** A touch without its optional fields. */
export function bareTouch(
  siteId: string,
  visitorId: string,
  over: Partial<VisitorTouch> = {},
): VisitorTouch {
  const { source: _s, medium: _m, campaign: _c, ...rest } = touch(siteId, visitorId, over);
  return rest;
}

export function payment(
  siteId: string,
  paymentId: string,
  over: Partial<PaymentRecord> = {},
): PaymentRecord {
  return {
    siteId,
    paymentId,
    customerId: "cus_1",
    currency: "USD",
    amountMinor: 1999,
    feeMinor: 88,
    kind: "charge",
    status: "succeeded",
    paidAt: T0,
    metadata: { order: "A-1" },
    createdAt: T0 + 10,
    updatedAt: T0 + 10,
    ...over,
  };
}

/** A payment write whose customer patch only names the customer. */
export function write(p: PaymentRecord, extra: Partial<PaymentWrite> = {}): PaymentWrite {
  return {
    payment: p,
    customer: { siteId: p.siteId, customerId: p.customerId, at: p.updatedAt },
    ...extra,
  };
}

/** What every part of the contract gets: the suite's store and builders that write to it. */
export interface StoreContract {
  /** The suite's name: `sqlite` or `mongodb`. */
  name: string;
  /** Opens another store over the same data. */
  open: () => Promise<Store>;
  /** The suite's store, opened before the first test. */
  readonly store: Store;
  /** A new account, stored. */
  newAccount(over?: Partial<AccountRecord>): Promise<AccountRecord>;
  /** A new account with a new site, stored. */
  newSite(): Promise<{ account: AccountRecord; site: SiteRecord }>;
  /** An API key record of a site (not stored). */
  key(siteId: string, over?: Partial<ApiKeyRecord>): ApiKeyRecord;
}

/** The contract's context over the store `current` returns once the suite opened it. */
export function storeContract(
  name: string,
  open: () => Promise<Store>,
  current: () => Store,
): StoreContract {
  async function newAccount(over: Partial<AccountRecord> = {}): Promise<AccountRecord> {
    const account: AccountRecord = {
      id: uid("acct"),
      name: "Example Ltd",
      plan: "free",
      createdAt: T0,
      ...over,
    };
    await current().createAccount(account);
    return account;
  }

  async function newSite(): Promise<{ account: AccountRecord; site: SiteRecord }> {
    const account = await newAccount();
    const site: SiteRecord = {
      id: uid("site"),
      accountId: account.id,
      hostnames: ["example.com", "www.example.com"],
      createdAt: T0 + 1,
    };
    await current().createSite(site);
    return { account, site };
  }

  function key(siteId: string, over: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
    return {
      id: uid("key"),
      siteId,
      name: "server",
      scopes: ["events", "payments"],
      hash: uid("hash"),
      prefix: "mk_live_3f9c",
      createdBy: "user_1",
      createdAt: T0 + 2,
      ...over,
    };
  }
  return {
    name,
    open,
    get store() {
      return current();
    },
    newAccount,
    newSite,
    key,
  };
}

/**
 * The stored payments of [from, to) summed by channel and currency as
 * RevenueByChannel shows them (the rule itself is the query layer's,
 * checked against the reference model): what the store contract asserts
 * about the channels, amounts and kinds it keeps, now that the store has no
 * revenue read of its own.
 */
export async function storedRevenue(
  store: Pick<Store, "pagePayments">,
  siteId: string,
  from: number,
  to: number,
): Promise<RevenueRow[]> {
  const rows = new Map<string, RevenueRow & { customers: Set<string> }>();
  let after: PaymentPage["next"];
  do {
    const page = await store.pagePayments(siteId, {
      from,
      to,
      limit: 100,
      ...(after ? { after } : {}),
    });
    for (const p of page.payments) {
      if (p.status !== "succeeded") continue;
      const channel = p.attribution?.channel ?? p.erasedChannel ?? "unattributed";
      const key = `${channel}\u0000${p.currency}`;
      const row = rows.get(key) ?? {
        channel,
        currency: p.currency,
        grossMinor: 0n,
        refundsMinor: 0n,
        chargebacksMinor: 0n,
        payments: 0,
        payingCustomers: 0,
        customers: new Set<string>(),
      };
      const amount = BigInt(p.amountMinor);
      if (p.kind === "charge") {
        row.grossMinor += amount;
        row.customers.add(p.customerId);
      } else if (p.kind === "refund") row.refundsMinor += amount;
      else row.chargebacksMinor += amount;
      row.payments += 1;
      row.payingCustomers = row.customers.size;
      rows.set(key, row);
    }
    after = page.next;
  } while (after);
  return [...rows].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, { customers: _c, ...row }]) => row);
}
