/**
 * The store contract: what every adapter of the port (src/store/port.ts) must
 * do, asserted exactly. Each adapter's test file calls describeStoreContract
 * with a function that opens a fresh store.
 *
 * Tests share one store per suite and never reuse ids (see `uid`), so they do
 * not depend on each other or on their order.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_VISITORS_PER_USER } from "../../src/domain/attribution/identity-cap.js";
import { byTimeThenVisitor } from "../../src/domain/attribution/ranking.js";
import type {
  AccountRecord,
  ApiKeyRecord,
  Attribution,
  CustomerPatch,
  EventGroup,
  EventRecord,
  IdentityLink,
  PaymentRecord,
  PaymentWrite,
  RevenueRow,
  SiteRecord,
  Store,
  SubscriptionPatch,
  VisitorTouch,
} from "../../src/store/port.js";

/** 2025-06-01T00:00:00Z: a fixed base time, so expected values are exact. */
const T0 = Date.UTC(2025, 5, 1);
const MONTH = "2025-06";
const MAX_SAFE = Number.MAX_SAFE_INTEGER; // 9007199254740991

let counter = 0;
/** An id no other test (or earlier run against the same database) uses. */
function uid(prefix: string): string {
  counter += 1;
  return `${prefix}_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}_${counter}`;
}

let dayCounter = 0;
/** A UTC day (`YYYY-MM-DD`) no other test uses: days counted from a random start in 2100-2199. */
const DAY_BASE = Date.UTC(2100 + Math.floor(Math.random() * 99), 0, 1);
function uniqueDay(): string {
  dayCounter += 1;
  return new Date(DAY_BASE + dayCounter * 86_400_000).toISOString().slice(0, 10);
}

function event(siteId: string, name: string, over: Partial<EventRecord> = {}): EventRecord {
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

function group(
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
function touch(siteId: string, visitorId: string, over: Partial<VisitorTouch> = {}): VisitorTouch {
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
function bareTouch(
  siteId: string,
  visitorId: string,
  over: Partial<VisitorTouch> = {},
): VisitorTouch {
  const { source: _s, medium: _m, campaign: _c, ...rest } = touch(siteId, visitorId, over);
  return rest;
}

function payment(
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
function write(p: PaymentRecord, extra: Partial<PaymentWrite> = {}): PaymentWrite {
  return {
    payment: p,
    customer: { siteId: p.siteId, customerId: p.customerId, at: p.updatedAt },
    ...extra,
  };
}

export function describeStoreContract(name: string, open: () => Promise<Store>): void {
  describe(`store contract: ${name}`, () => {
    let store: Store;

    beforeAll(async () => {
      store = await open();
    });

    afterAll(async () => {
      await store?.close();
    });

    async function newAccount(over: Partial<AccountRecord> = {}): Promise<AccountRecord> {
      const account: AccountRecord = {
        id: uid("acct"),
        name: "Example Ltd",
        plan: "free",
        createdAt: T0,
        ...over,
      };
      await store.createAccount(account);
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
      await store.createSite(site);
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

    describe("lifecycle", () => {
      it("names its kind and answers ping", async () => {
        expect(["sqlite", "mongodb"]).toContain(store.kind);
        expect(store.kind).toBe(name.startsWith("mongo") ? "mongodb" : "sqlite");
        await expect(store.ping()).resolves.toBeUndefined();
      });

      it("opens again over existing data, and close is idempotent", async () => {
        const other = await open();
        await other.ping();
        await other.close();
        await expect(other.close()).resolves.toBeUndefined();
      });
    });

    describe("accounts, users and memberships", () => {
      it("creates and reads an account; an unknown one is undefined", async () => {
        const account = await newAccount({ name: "Acme", plan: "growth", createdAt: T0 + 123 });
        expect(await store.getAccount(account.id)).toEqual({
          id: account.id,
          name: "Acme",
          plan: "growth",
          createdAt: T0 + 123,
        });
        expect(await store.getAccount(uid("acct"))).toBeUndefined();
      });

      it("refuses a second account with the same id", async () => {
        const account = await newAccount();
        await expect(store.createAccount({ ...account, name: "Other" })).rejects.toThrow();
        expect((await store.getAccount(account.id))?.name).toBe("Example Ltd");
      });

      it("sets the plan, and says false for an unknown account", async () => {
        const account = await newAccount();
        expect(await store.setPlan(account.id, "scale")).toBe(true);
        expect((await store.getAccount(account.id))?.plan).toBe("scale");
        expect(await store.setPlan(account.id, "scale")).toBe(true);
        expect(await store.setPlan(uid("acct"), "starter")).toBe(false);
      });

      it("ensureUser creates a user once per email and returns the existing one after", async () => {
        const email = `${uid("ada")}@example.com`;
        const first = { id: uid("user"), email, createdAt: T0 + 5 };
        expect(await store.ensureUser(first)).toEqual(first);
        const again = await store.ensureUser({ id: uid("user"), email, createdAt: T0 + 9 });
        expect(again).toEqual(first);
        const other = { id: uid("user"), email: `${uid("bob")}@example.com`, createdAt: T0 + 6 };
        expect(await store.ensureUser(other)).toEqual(other);
      });

      it("concurrent ensureUser calls of one email agree on one user", async () => {
        const email = `${uid("eve")}@example.com`;
        const users = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            store.ensureUser({ id: uid("user"), email, createdAt: T0 + i }),
          ),
        );
        for (const u of users) expect(u).toEqual(users[0]);
      });

      it("adds and changes memberships; an unknown one is undefined", async () => {
        const account = await newAccount();
        const user = await store.ensureUser({
          id: uid("user"),
          email: `${uid("m")}@example.com`,
          createdAt: T0,
        });
        expect(await store.getRole(account.id, user.id)).toBeUndefined();
        await store.setMembership(account.id, user.id, "member");
        expect(await store.getRole(account.id, user.id)).toBe("member");
        await store.setMembership(account.id, user.id, "admin");
        expect(await store.getRole(account.id, user.id)).toBe("admin");
        const other = await newAccount();
        expect(await store.getRole(other.id, user.id)).toBeUndefined();
      });
    });

    describe("sites and keys", () => {
      it("creates and reads a site; an unknown one is undefined", async () => {
        const { account, site } = await newSite();
        expect(await store.getSite(site.id)).toEqual({
          id: site.id,
          accountId: account.id,
          hostnames: ["example.com", "www.example.com"],
          createdAt: T0 + 1,
        });
        expect(await store.getSite(uid("site"))).toBeUndefined();
      });

      it("inserts a key and finds it by id and by hash, with its site's account", async () => {
        const { account, site } = await newSite();
        const k = key(site.id, { scopes: ["events"] });
        await store.insertKey(k);
        expect(await store.getKey(k.id)).toEqual(k);
        const principal = await store.findKeyByHash(k.hash);
        expect(principal).toEqual({ ...k, accountId: account.id });
        expect(principal?.lastUsedAt).toBeUndefined();
        expect(await store.findKeyByHash(uid("hash"))).toBeUndefined();
        expect(await store.getKey(uid("key"))).toBeUndefined();
      });

      it("keeps lastUsedAt given at insert", async () => {
        const { site } = await newSite();
        const k = key(site.id, { lastUsedAt: T0 + 77 });
        await store.insertKey(k);
        expect(await store.getKey(k.id)).toEqual(k);
      });

      it("refuses a second key with the same hash", async () => {
        const { site } = await newSite();
        const k = key(site.id);
        await store.insertKey(k);
        await expect(store.insertKey(key(site.id, { hash: k.hash }))).rejects.toThrow();
      });

      it("lists a site's keys by creation time, then id", async () => {
        const { site } = await newSite();
        const other = await newSite();
        const base = uid("key");
        const late = key(site.id, { id: `${base}_a`, createdAt: T0 + 300 });
        const early = key(site.id, { id: `${base}_z`, createdAt: T0 + 100 });
        const lateB = key(site.id, { id: `${base}_b`, createdAt: T0 + 300 });
        for (const k of [lateB, late, early]) await store.insertKey(k);
        await store.insertKey(key(other.site.id));
        expect(await store.listKeys(site.id)).toEqual([early, late, lateB]);
        const { site: empty } = await newSite();
        expect(await store.listKeys(empty.id)).toEqual([]);
      });

      it("deletes a key: it is unknown on the next lookup", async () => {
        const { site } = await newSite();
        const k = key(site.id);
        await store.insertKey(k);
        expect(await store.findKeyByHash(k.hash)).toBeDefined();
        expect(await store.deleteKey(k.id)).toBe(true);
        expect(await store.findKeyByHash(k.hash)).toBeUndefined();
        expect(await store.getKey(k.id)).toBeUndefined();
        expect(await store.listKeys(site.id)).toEqual([]);
        expect(await store.deleteKey(k.id)).toBe(false);
      });

      it("directoryVersion rises with every account, site and key change, not with a key's use", async () => {
        const versions = [await store.directoryVersion()];
        const changed = async () => {
          const v = await store.directoryVersion();
          expect(v).toBeGreaterThan(versions.at(-1) as number);
          versions.push(v);
        };
        const { account, site } = await newSite();
        await changed();
        await store.setPlan(account.id, "starter");
        await changed();
        const k = key(site.id);
        await store.insertKey(k);
        await changed();
        await store.touchKey(k.id, T0 + 700);
        expect(await store.directoryVersion()).toBe(versions.at(-1));
        await store.deleteKey(k.id);
        await changed();
      });

      it("touchKey records the latest use and never moves it back", async () => {
        const { site } = await newSite();
        const k = key(site.id);
        await store.insertKey(k);
        await store.touchKey(k.id, T0 + 500);
        expect((await store.getKey(k.id))?.lastUsedAt).toBe(T0 + 500);
        await store.touchKey(k.id, T0 + 400);
        expect((await store.findKeyByHash(k.hash))?.lastUsedAt).toBe(T0 + 500);
        await store.touchKey(k.id, T0 + 600);
        expect(await store.getKey(k.id)).toEqual({ ...k, lastUsedAt: T0 + 600 });
        await expect(store.touchKey(uid("key"), T0)).resolves.toBeUndefined();
      });
    });

    describe("events and quota", () => {
      it("usage is 0 for a counter never raised", async () => {
        expect(await store.getUsage(uid("acct"), MONTH)).toBe(0);
      });

      it("commitEvents of no groups returns no results", async () => {
        expect(await store.commitEvents([])).toEqual([]);
      });

      it("stops at the ceiling exactly: 4, 4, 4 against 10 → ok, ok, quota_exceeded", async () => {
        const { account, site } = await newSite();
        const batch = (tag: string) => [1, 2, 3, 4].map((n) => event(site.id, `${tag}${n}`));
        const results = await store.commitEvents([
          group(account.id, batch("a"), { ceiling: 10 }),
          group(account.id, batch("b"), { ceiling: 10 }),
          group(account.id, batch("c"), {
            ceiling: 10,
            links: [{ siteId: site.id, userId: "u_c", visitorId: "vis_c", ts: T0 }],
          }),
        ]);
        expect(results).toEqual([
          { ok: true, remaining: 6 },
          { ok: true, remaining: 2 },
          { ok: false, reason: "quota_exceeded", remaining: 2 },
        ]);
        expect(await store.getUsage(account.id, MONTH)).toBe(8);
        const names = (await store.listEvents(site.id, 100)).map((e) => e.name);
        expect(names).toEqual(["b4", "b3", "b2", "b1", "a4", "a3", "a2", "a1"]);
        // Nothing of the refused group is written, links included.
        expect(await store.findVisitorsByUser(site.id, "u_c")).toEqual([]);
      });

      it("applies the ceiling across calls, and fills it exactly", async () => {
        const { account, site } = await newSite();
        const one = (n: string, count: number) =>
          group(
            account.id,
            Array.from({ length: count }, (_, i) => event(site.id, `${n}${i}`)),
            { ceiling: 10 },
          );
        expect(await store.commitEvents([one("a", 7)])).toEqual([{ ok: true, remaining: 3 }]);
        expect(await store.commitEvents([one("b", 4)])).toEqual([
          { ok: false, reason: "quota_exceeded", remaining: 3 },
        ]);
        expect(await store.commitEvents([one("c", 3)])).toEqual([{ ok: true, remaining: 0 }]);
        expect(await store.commitEvents([one("d", 1)])).toEqual([
          { ok: false, reason: "quota_exceeded", remaining: 0 },
        ]);
        expect(await store.getUsage(account.id, MONTH)).toBe(10);
        expect(await store.listEvents(site.id, 100)).toHaveLength(10);
      });

      it("refuses a group larger than the whole ceiling without creating a counter", async () => {
        const { account, site } = await newSite();
        const events = [1, 2, 3].map((n) => event(site.id, `e${n}`));
        expect(await store.commitEvents([group(account.id, events, { ceiling: 2 })])).toEqual([
          { ok: false, reason: "quota_exceeded", remaining: 2 },
        ]);
        expect(await store.getUsage(account.id, MONTH)).toBe(0);
        expect(await store.listEvents(site.id, 10)).toEqual([]);
      });

      it("a count already past a lowered ceiling reports 0 remaining", async () => {
        const { account, site } = await newSite();
        const four = [1, 2, 3, 4].map((n) => event(site.id, `e${n}`));
        await store.commitEvents([group(account.id, four, { ceiling: 10 })]);
        expect(
          await store.commitEvents([group(account.id, [event(site.id, "x")], { ceiling: 3 })]),
        ).toEqual([{ ok: false, reason: "quota_exceeded", remaining: 0 }]);
        expect(await store.getUsage(account.id, MONTH)).toBe(4);
      });

      it("groups with countable 0 never touch the quota and are stored even when it is full", async () => {
        const { account, site } = await newSite();
        const link: IdentityLink = { siteId: site.id, userId: "u_0", visitorId: "vis_0", ts: T0 };
        const identify = event(site.id, "$identify", { userId: "u_0", visitorId: "vis_0" });
        // Nothing counted yet: no counter is created.
        expect(
          await store.commitEvents([
            group(account.id, [identify], { ceiling: 5, countable: 0, links: [link] }),
          ]),
        ).toEqual([{ ok: true, remaining: 5 }]);
        expect(await store.getUsage(account.id, MONTH)).toBe(0);
        // Fill the quota, then a countable-0 group still goes through.
        const five = [1, 2, 3, 4, 5].map((n) => event(site.id, `p${n}`));
        const results = await store.commitEvents([
          group(account.id, five, { ceiling: 5 }),
          group(account.id, [event(site.id, "$identify", { userId: "u_1" })], {
            ceiling: 5,
            countable: 0,
            links: [{ siteId: site.id, userId: "u_1", visitorId: "vis_1", ts: T0 }],
          }),
          group(account.id, [event(site.id, "late")], { ceiling: 5 }),
        ]);
        expect(results).toEqual([
          { ok: true, remaining: 0 },
          { ok: true, remaining: 0 },
          { ok: false, reason: "quota_exceeded", remaining: 0 },
        ]);
        expect(await store.getUsage(account.id, MONTH)).toBe(5);
        const names = (await store.listEvents(site.id, 100)).map((e) => e.name);
        expect(names).toEqual(["$identify", "p5", "p4", "p3", "p2", "p1", "$identify"]);
        expect(await store.findVisitorsByUser(site.id, "u_1")).toEqual([
          { siteId: site.id, userId: "u_1", visitorId: "vis_1", ts: T0 },
        ]);
      });

      it("keeps a counter per (account, month)", async () => {
        const { account, site } = await newSite();
        const other = await newAccount();
        const results = await store.commitEvents([
          group(account.id, [event(site.id, "a")], { ceiling: 1 }),
          group(account.id, [event(site.id, "b")], { ceiling: 1, month: "2025-07" }),
          group(other.id, [event(site.id, "c")], { ceiling: 1 }),
          group(account.id, [event(site.id, "d")], { ceiling: 1 }),
        ]);
        expect(results).toEqual([
          { ok: true, remaining: 0 },
          { ok: true, remaining: 0 },
          { ok: true, remaining: 0 },
          { ok: false, reason: "quota_exceeded", remaining: 0 },
        ]);
        expect(await store.getUsage(account.id, MONTH)).toBe(1);
        expect(await store.getUsage(account.id, "2025-07")).toBe(1);
        expect(await store.getUsage(other.id, MONTH)).toBe(1);
      });

      it("20 concurrent single-event calls against a ceiling of 10: exactly 10 pass", async () => {
        const { account, site } = await newSite();
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.commitEvents([group(account.id, [event(site.id, `c${i}`)], { ceiling: 10 })]),
          ),
        );
        const flat = results.map((r) => {
          expect(r).toHaveLength(1);
          return r[0];
        });
        const ok = flat.filter((r) => r?.ok);
        const refused = flat.filter((r) => r && !r.ok);
        expect(ok).toHaveLength(10);
        expect(refused).toHaveLength(10);
        // Each accepted call saw its own count: remaining 9, 8, … 0, once each.
        expect(
          ok.map((r) => (r?.ok ? r.remaining : undefined)).sort((a, b) => (a ?? 0) - (b ?? 0)),
        ).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        for (const r of refused)
          expect(r).toEqual({ ok: false, reason: "quota_exceeded", remaining: 0 });
        expect(await store.getUsage(account.id, MONTH)).toBe(10);
        expect(await store.listEvents(site.id, 100)).toHaveLength(10);
      });

      it("round-trips an event with every optional field", async () => {
        const { account, site } = await newSite();
        const full: EventRecord = {
          siteId: site.id,
          name: "signup",
          url: "https://example.com/pricing?utm_source=news&gclid=abc",
          referrer: "https://news.example.org/post/1",
          title: "Pricing — Example ✓",
          width: 1280,
          language: "en-US",
          props: {
            plan: "pro",
            seats: 3,
            price: 12.5,
            big: 2 ** 40,
            negative: -7,
            trial: true,
            note: null,
            tags: ["a", "b", 1],
            nested: { deep: { x: 1, y: [true, null] } },
            empty: {},
            $dollar: "kept",
            "dotted.key": "kept",
          },
          ts: T0 + 1_234,
          receivedAt: T0 + 5_678,
          visitorId: "vis_full",
          userId: "user_42",
          country: "DE",
          browser: "Chrome",
          os: "Windows",
          device: "desktop",
          referrerHost: "news.example.org",
          utmSource: "news",
          utmMedium: "email",
          utmCampaign: "launch",
          utmTerm: "analytics",
          utmContent: "hero",
          clickIds: { gclid: "abc", fbclid: "def" },
        };
        await store.commitEvents([group(account.id, [full], { ceiling: 100 })]);
        const [stored] = await store.listEvents(site.id, 10);
        expect(stored).toEqual(full);
        expect(stored?.width).toBe(1280);
        expect(stored?.props).toStrictEqual(full.props);
      });

      it("round-trips a minimal event with its optional fields undefined", async () => {
        const { account, site } = await newSite();
        const minimal = event(site.id, "pageview", { ts: T0 + 1, receivedAt: T0 + 2 });
        // An empty click-id map is stored as none, and an empty props object as itself.
        const emptyMaps = event(site.id, "custom", { clickIds: {}, props: {} });
        await store.commitEvents([group(account.id, [minimal, emptyMaps], { ceiling: 100 })]);
        const [second, first] = await store.listEvents(site.id, 10);
        expect(first).toEqual(minimal);
        for (const field of [
          "referrer",
          "title",
          "width",
          "language",
          "props",
          "userId",
          "country",
          "browser",
          "os",
          "device",
          "referrerHost",
          "utmSource",
          "utmMedium",
          "utmCampaign",
          "utmTerm",
          "utmContent",
          "clickIds",
        ] as const) {
          expect(first?.[field], field).toBeUndefined();
        }
        expect(second?.props).toEqual({});
        expect(second?.clickIds).toBeUndefined();
      });

      it("lists a site's events newest first, by insertion order, up to the limit", async () => {
        const { account, site } = await newSite();
        const other = await newSite();
        // Same receivedAt everywhere: the order is the order of insertion.
        for (const n of ["e1", "e2", "e3"]) {
          await store.commitEvents([group(account.id, [event(site.id, n)], { ceiling: 100 })]);
        }
        await store.commitEvents([
          group(account.id, [event(site.id, "e4"), event(site.id, "e5")], { ceiling: 100 }),
          group(other.account.id, [event(other.site.id, "x1")], { ceiling: 100 }),
          group(account.id, [event(site.id, "e6")], { ceiling: 100 }),
        ]);
        const names = async (limit: number) =>
          (await store.listEvents(site.id, limit)).map((e) => e.name);
        expect(await names(3)).toEqual(["e6", "e5", "e4"]);
        expect(await names(1)).toEqual(["e6"]);
        expect(await names(100)).toEqual(["e6", "e5", "e4", "e3", "e2", "e1"]);
        expect((await store.listEvents(other.site.id, 100)).map((e) => e.name)).toEqual(["x1"]);
        expect(await store.listEvents(uid("site"), 10)).toEqual([]);
      });

      it("lists the newest events among many (more than one bucket's worth)", async () => {
        const { account, site } = await newSite();
        const total = 450;
        const all = Array.from({ length: total }, (_, i) => event(site.id, `n${i}`));
        // 45 groups of 10 events in calls of 25, 15 and 5 groups.
        let start = 0;
        for (const groupsInCall of [25, 15, 5]) {
          const groups: EventGroup[] = [];
          for (let g = 0; g < groupsInCall; g++, start += 10) {
            groups.push(group(account.id, all.slice(start, start + 10), { ceiling: 1_000 }));
          }
          await store.commitEvents(groups);
        }
        const listed = (await store.listEvents(site.id, 250)).map((e) => e.name);
        expect(listed).toEqual(Array.from({ length: 250 }, (_, i) => `n${total - 1 - i}`));
        expect(await store.listEvents(site.id, 1_000)).toHaveLength(total);
        expect(await store.getUsage(account.id, MONTH)).toBe(total);
      });

      it("stores identity links and finds a user's visitors by time, earliest link kept", async () => {
        const { account, site } = await newSite();
        const other = await newSite();
        const link = (visitorId: string, ts: number, userId = "u_1", siteId = site.id) => ({
          siteId,
          userId,
          visitorId,
          ts,
        });
        await store.commitEvents([
          group(account.id, [event(site.id, "$identify", { userId: "u_1" })], {
            ceiling: 100,
            countable: 0,
            links: [link("vis_b", T0 + 30), link("vis_a", T0 + 50), link("vis_b", T0 + 20)],
          }),
        ]);
        await store.commitEvents([
          group(account.id, [], {
            ceiling: 100,
            countable: 0,
            links: [
              link("vis_a", T0 + 10),
              link("vis_b", T0 + 40),
              link("vis_c", T0 + 60),
              link("vis_x", T0, "u_2"),
              link("vis_y", T0, "u_1", other.site.id),
            ],
          }),
        ]);
        expect(await store.findVisitorsByUser(site.id, "u_1")).toEqual([
          link("vis_a", T0 + 10),
          link("vis_b", T0 + 20),
          link("vis_c", T0 + 60),
        ]);
        expect(await store.findVisitorsByUser(site.id, "u_2")).toEqual([link("vis_x", T0, "u_2")]);
        expect(await store.findVisitorsByUser(site.id, "nobody")).toEqual([]);
      });

      it(`links at most ${MAX_VISITORS_PER_USER} visitors per user id, keeping the best first touch`, async () => {
        const { account, site } = await newSite();
        const link = (visitorId: string, ts = T0) => ({
          siteId: site.id,
          userId: "u_cap",
          visitorId,
          ts,
        });
        const identify = (links: IdentityLink[], touches?: VisitorTouch[]) =>
          store.commitEvents([
            group(account.id, [], {
              ceiling: 1_000,
              countable: 0,
              links,
              ...(touches ? { touches } : {}),
            }),
          ]);
        const ids = (n: number, from = 0) =>
          Array.from({ length: n }, (_, i) => `vis_${String(from + i).padStart(4, "0")}`);
        // 100 visitors with touches at T0 + 1000…, then 50 more in two calls: past the cap.
        await identify(
          ids(MAX_VISITORS_PER_USER).map((v) => link(v)),
          ids(MAX_VISITORS_PER_USER).map((v, i) => touch(site.id, v, { ts: T0 + 1_000 + i })),
        );
        await identify(ids(25, 500).map((v) => link(v)));
        await identify(
          ids(25, 600).map((v) => link(v)),
          [touch(site.id, "vis_0600", { ts: T0 + 5_000 })],
        );
        let linked = (await store.findVisitorsByUser(site.id, "u_cap")).map((l) => l.visitorId);
        expect(linked).toHaveLength(MAX_VISITORS_PER_USER);
        expect(linked.sort()).toEqual(ids(MAX_VISITORS_PER_USER));
        // A visitor whose first touch beats the weakest linked one replaces it (the latest touch).
        await identify([link("vis_early")], [touch(site.id, "vis_early", { ts: T0 })]);
        linked = (await store.findVisitorsByUser(site.id, "u_cap")).map((l) => l.visitorId);
        expect(linked).toHaveLength(MAX_VISITORS_PER_USER);
        expect(linked).toContain("vis_early");
        expect(linked).not.toContain(ids(1, MAX_VISITORS_PER_USER - 1)[0]);
        // Known visitors are still re-linked (earliest time kept), whatever the count.
        await identify([link("vis_0000", T0 - 5)]);
        expect((await store.findVisitorsByUser(site.id, "u_cap"))[0]).toEqual(
          link("vis_0000", T0 - 5),
        );
      });

      it("ensureSalt: the first writer wins, for every caller", async () => {
        const day = uniqueDay();
        expect(await store.ensureSalt(day, "salt-one")).toBe("salt-one");
        expect(await store.ensureSalt(day, "salt-two")).toBe("salt-one");
        expect(await store.ensureSalt(uniqueDay(), "salt-three")).toBe("salt-three");

        const racedDay = uniqueDay();
        const candidates = Array.from({ length: 10 }, (_, i) => `candidate-${i}`);
        const salts = await Promise.all(candidates.map((c) => store.ensureSalt(racedDay, c)));
        expect(new Set(salts).size).toBe(1);
        expect(candidates).toContain(salts[0]);
        expect(await store.ensureSalt(racedDay, "late")).toBe(salts[0]);
      });

      it("pruneSalts deletes the salts of earlier days only", async () => {
        // Days far before every other test's days, so pruning touches nothing else.
        await store.ensureSalt("1001-01-01", "a");
        await store.ensureSalt("1001-01-02", "b");
        await store.ensureSalt("1001-01-03", "c");
        await store.pruneSalts("1001-01-02");
        expect(await store.ensureSalt("1001-01-01", "new")).toBe("new");
        expect(await store.ensureSalt("1001-01-02", "new")).toBe("b");
        expect(await store.ensureSalt("1001-01-03", "new")).toBe("c");
      });
    });

    describe("payments", () => {
      it("inserts a payment with its customer and subscription", async () => {
        const { site } = await newSite();
        const p = payment(site.id, uid("pay"), { subscriptionId: "sub_1" });
        const subscription: SubscriptionPatch = {
          siteId: site.id,
          subscriptionId: "sub_1",
          customerId: "cus_1",
          currency: "USD",
          plan: "pro",
          interval: "month",
          amountMinor: 4900,
          defaults: { status: "active", startedAt: T0 },
          at: T0 + 10,
        };
        await store.commitPayments([
          {
            payment: p,
            customer: {
              siteId: site.id,
              customerId: "cus_1",
              email: "buyer@example.com",
              at: T0 + 10,
            },
            subscription,
          },
        ]);
        expect(await store.getPayment(site.id, p.paymentId)).toEqual(p);
        expect(await store.getCustomer(site.id, "cus_1")).toEqual({
          siteId: site.id,
          customerId: "cus_1",
          email: "buyer@example.com",
          metadata: {},
          createdAt: T0 + 10,
          updatedAt: T0 + 10,
        });
        expect(await store.getSubscription(site.id, "sub_1")).toEqual({
          siteId: site.id,
          subscriptionId: "sub_1",
          customerId: "cus_1",
          currency: "USD",
          plan: "pro",
          interval: "month",
          status: "active",
          amountMinor: 4900,
          startedAt: T0,
          createdAt: T0 + 10,
          updatedAt: T0 + 10,
        });
        expect(await store.getPayment(site.id, uid("pay"))).toBeUndefined();
        expect(await store.getPayment(uid("site"), p.paymentId)).toBeUndefined();
        expect(await store.getCustomer(site.id, uid("cus"))).toBeUndefined();
        expect(await store.getSubscription(site.id, uid("sub"))).toBeUndefined();
      });

      it("round-trips a payment without optional fields as undefined", async () => {
        const { site } = await newSite();
        const p = payment(site.id, uid("pay"), { feeMinor: undefined, metadata: {} });
        await store.commitPayments([write(p)]);
        const stored = await store.getPayment(site.id, p.paymentId);
        expect(stored).toEqual(p);
        expect(stored?.feeMinor).toBeUndefined();
        expect(stored?.subscriptionId).toBeUndefined();
        expect(stored?.metadata).toEqual({});
        expect(await store.getSubscription(site.id, "sub_1")).toBeUndefined();
      });

      it("re-sending a payment replaces its fields but keeps createdAt", async () => {
        const { site } = await newSite();
        const id = uid("pay");
        const first = payment(site.id, id, {
          subscriptionId: "sub_9",
          createdAt: T0 + 1,
          updatedAt: T0 + 1,
        });
        await store.commitPayments([write(first)]);
        const second = payment(site.id, id, {
          customerId: "cus_2",
          currency: "EUR",
          amountMinor: 2999,
          feeMinor: undefined,
          kind: "refund",
          status: "failed",
          paidAt: T0 + 3,
          metadata: { order: "A-2", note: "retry" },
          createdAt: T0 + 2,
          updatedAt: T0 + 2,
        });
        await store.commitPayments([write(second)]);
        const stored = await store.getPayment(site.id, id);
        expect(stored).toEqual({ ...second, createdAt: T0 + 1 });
        expect(stored?.feeMinor).toBeUndefined();
        expect(stored?.subscriptionId).toBeUndefined();
        expect(stored?.metadata).toEqual({ order: "A-2", note: "retry" });
      });

      it("a customer patch never erases known fields with absent ones", async () => {
        const { site } = await newSite();
        const customerId = uid("cus");
        const commit = (customer: CustomerPatch) =>
          store.commitPayments([
            {
              payment: payment(site.id, uid("pay"), { customerId, updatedAt: customer.at }),
              customer,
            },
          ]);
        await commit({
          siteId: site.id,
          customerId,
          email: "ada@example.com",
          userId: "user_ada",
          name: "Ada",
          country: "GB",
          visitorId: "vis_ada",
          metadata: { tier: "gold", source: "ads" },
          at: T0 + 1,
        });
        await commit({ siteId: site.id, customerId, name: "Ada L.", at: T0 + 2 });
        expect(await store.getCustomer(site.id, customerId)).toEqual({
          siteId: site.id,
          customerId,
          email: "ada@example.com",
          userId: "user_ada",
          name: "Ada L.",
          country: "GB",
          visitorId: "vis_ada",
          metadata: { tier: "gold", source: "ads" },
          createdAt: T0 + 1,
          updatedAt: T0 + 2,
        });
        // Present metadata replaces the map as a whole (no merge).
        await commit({ siteId: site.id, customerId, metadata: { tier: "platinum" }, at: T0 + 3 });
        const c = await store.getCustomer(site.id, customerId);
        expect(c?.metadata).toEqual({ tier: "platinum" });
        expect(c?.email).toBe("ada@example.com");
        expect(c?.updatedAt).toBe(T0 + 3);
        expect(c?.createdAt).toBe(T0 + 1);
      });

      it("stores the email as given (the domain lower-cases it) and absent fields as undefined", async () => {
        const { site } = await newSite();
        const customerId = uid("cus");
        await store.commitPayments([
          {
            payment: payment(site.id, uid("pay"), { customerId }),
            customer: { siteId: site.id, customerId, email: "buyer+tag@example.com", at: T0 },
          },
        ]);
        const c = await store.getCustomer(site.id, customerId);
        expect(c).toEqual({
          siteId: site.id,
          customerId,
          email: "buyer+tag@example.com",
          metadata: {},
          createdAt: T0,
          updatedAt: T0,
        });
        for (const field of ["userId", "name", "country", "visitorId"] as const) {
          expect(c?.[field], field).toBeUndefined();
        }
      });

      it("applies subscription defaults only on insert", async () => {
        const { site } = await newSite();
        const subscriptionId = uid("sub");
        const base = { siteId: site.id, subscriptionId, customerId: "cus_1", currency: "EUR" };
        const commit = (s: SubscriptionPatch) =>
          store.commitPayments([
            write(payment(site.id, uid("pay"), { subscriptionId, updatedAt: s.at }), {
              subscription: s,
            }),
          ]);
        await commit({
          ...base,
          plan: "pro",
          interval: "year",
          amountMinor: 99_00,
          defaults: { status: "active", startedAt: T0 + 1 },
          at: T0 + 1,
        });
        await commit({
          ...base,
          status: "canceled",
          canceledAt: T0 + 5,
          defaults: { status: "trialing", startedAt: T0 + 2 },
          at: T0 + 2,
        });
        expect(await store.getSubscription(site.id, subscriptionId)).toEqual({
          ...base,
          plan: "pro",
          interval: "year",
          status: "canceled",
          amountMinor: 99_00,
          startedAt: T0 + 1,
          canceledAt: T0 + 5,
          createdAt: T0 + 1,
          updatedAt: T0 + 2,
        });
        // No status sent: the stored one stays, whatever the defaults say.
        await commit({
          ...base,
          customerId: "cus_2",
          currency: "GBP",
          currentPeriodEnd: T0 + 9,
          endedAt: T0 + 8,
          defaults: { status: "active", startedAt: T0 + 3 },
          at: T0 + 3,
        });
        // The currency is the unit of the amount: without an amount it does not change.
        expect(await store.getSubscription(site.id, subscriptionId)).toEqual({
          ...base,
          customerId: "cus_2",
          currency: "EUR",
          plan: "pro",
          interval: "year",
          status: "canceled",
          amountMinor: 99_00,
          startedAt: T0 + 1,
          currentPeriodEnd: T0 + 9,
          canceledAt: T0 + 5,
          endedAt: T0 + 8,
          createdAt: T0 + 1,
          updatedAt: T0 + 3,
        });
        await commit({
          ...base,
          currency: "GBP",
          amountMinor: 80_00,
          defaults: { status: "active", startedAt: T0 + 4 },
          at: T0 + 4,
        });
        expect(await store.getSubscription(site.id, subscriptionId)).toMatchObject({
          currency: "GBP",
          amountMinor: 80_00,
        });
      });

      it("a new subscription with status and start given ignores the defaults", async () => {
        const { site } = await newSite();
        const subscriptionId = uid("sub");
        await store.commitPayments([
          write(payment(site.id, uid("pay"), { subscriptionId }), {
            subscription: {
              siteId: site.id,
              subscriptionId,
              customerId: "cus_1",
              currency: "USD",
              status: "trialing",
              startedAt: T0 - 1_000,
              defaults: { status: "active", startedAt: T0 },
              at: T0,
            },
          }),
        ]);
        const s = await store.getSubscription(site.id, subscriptionId);
        expect(s?.status).toBe("trialing");
        expect(s?.startedAt).toBe(T0 - 1_000);
        for (const field of [
          "plan",
          "interval",
          "amountMinor",
          "currentPeriodEnd",
          "canceledAt",
          "endedAt",
        ] as const) {
          expect(s?.[field], field).toBeUndefined();
        }
      });

      it("applies several writes of one payment and customer in one batch in order", async () => {
        const { site } = await newSite();
        const id = uid("pay");
        const customerId = uid("cus");
        const first = payment(site.id, id, { customerId, amountMinor: 100, createdAt: T0 + 1 });
        const second = payment(site.id, id, {
          customerId,
          amountMinor: 200,
          feeMinor: undefined,
          createdAt: T0 + 2,
          updatedAt: T0 + 2,
        });
        await store.commitPayments([
          {
            payment: first,
            customer: {
              siteId: site.id,
              customerId,
              email: "a@example.com",
              metadata: { k: "1" },
              at: T0 + 1,
            },
          },
          { payment: second, customer: { siteId: site.id, customerId, name: "B", at: T0 + 2 } },
        ]);
        expect(await store.getPayment(site.id, id)).toEqual({ ...second, createdAt: T0 + 1 });
        expect(await store.getCustomer(site.id, customerId)).toEqual({
          siteId: site.id,
          customerId,
          email: "a@example.com",
          name: "B",
          metadata: { k: "1" },
          createdAt: T0 + 1,
          updatedAt: T0 + 2,
        });
      });

      it("20 concurrent sends of one new payment make one payment, and none fails", async () => {
        const { site } = await newSite();
        const id = uid("pay");
        const customerId = uid("cus");
        const subscriptionId = uid("sub");
        const sends = Array.from({ length: 20 }, (_, i) =>
          store.commitPayments([
            write(
              payment(site.id, id, {
                customerId,
                subscriptionId,
                amountMinor: 1000 + i,
                createdAt: T0 + i,
                updatedAt: T0 + i,
              }),
              {
                subscription: {
                  siteId: site.id,
                  subscriptionId,
                  customerId,
                  currency: "USD",
                  defaults: { status: "active", startedAt: T0 },
                  at: T0 + i,
                },
              },
            ),
          ]),
        );
        await expect(Promise.all(sends)).resolves.toHaveLength(20);
        const stored = await store.getPayment(site.id, id);
        expect(stored).toBeDefined();
        const i = (stored?.amountMinor ?? 0) - 1000;
        expect(i).toBeGreaterThanOrEqual(0);
        expect(i).toBeLessThan(20);
        expect(stored?.updatedAt).toBe(T0 + i);
        expect(stored?.createdAt).toBeGreaterThanOrEqual(T0);
        expect(stored?.createdAt).toBeLessThan(T0 + 20);
        expect((await store.getCustomer(site.id, customerId))?.customerId).toBe(customerId);
        expect((await store.getSubscription(site.id, subscriptionId))?.status).toBe("active");
      });

      it("keeps money as exact integer minor units", async () => {
        const { site } = await newSite();
        const cases: [string, number, number | undefined][] = [
          ["USD", 1999, 59],
          ["JPY", 1000, 0],
          ["KWD", 1234, 1],
          ["USD", MAX_SAFE, MAX_SAFE - 1],
          ["EUR", 1, undefined],
        ];
        const written = cases.map(([currency, amountMinor, feeMinor]) =>
          payment(site.id, uid("pay"), { currency, amountMinor, feeMinor }),
        );
        await store.commitPayments(written.map((p) => write(p)));
        for (const p of written) {
          const stored = await store.getPayment(site.id, p.paymentId);
          expect(stored).toEqual(p);
          expect(Number.isSafeInteger(stored?.amountMinor)).toBe(true);
          expect(stored?.amountMinor).toBe(p.amountMinor);
          expect(stored?.feeMinor).toBe(p.feeMinor);
        }
        const subscriptionId = uid("sub");
        await store.commitPayments([
          write(payment(site.id, uid("pay"), { subscriptionId }), {
            subscription: {
              siteId: site.id,
              subscriptionId,
              customerId: "cus_1",
              currency: "USD",
              amountMinor: MAX_SAFE,
              defaults: { status: "active", startedAt: T0 },
              at: T0,
            },
          }),
        ]);
        expect((await store.getSubscription(site.id, subscriptionId))?.amountMinor).toBe(MAX_SAFE);
      });

      it("commitPayments of no writes does nothing", async () => {
        await expect(store.commitPayments([])).resolves.toBeUndefined();
      });
    });

    describe("first touches", () => {
      /** Commits one group of touches only (countable 0, so never refused). */
      async function commitTouches(accountId: string, touches: VisitorTouch[]) {
        const [r] = await store.commitEvents([
          group(accountId, [], { ceiling: 100, countable: 0, touches }),
        ]);
        return r;
      }

      /** The stored first touches, in the order the domain sorts them (stores return any order). */
      async function firstTouches(siteId: string, visitorIds: string[]) {
        return (await store.getFirstTouches(siteId, visitorIds)).sort(byTimeThenVisitor);
      }

      it("keeps the best touch: non-internal over internal, then the earlier; ties keep the stored one", async () => {
        const { account, site } = await newSite();
        const first = (await store.getFirstTouches(site.id, ["v1"]))[0];
        expect(first).toBeUndefined();
        const steps: [VisitorTouch, boolean, VisitorTouch][] = [];
        const step = async (t: VisitorTouch, changes: boolean, stored: VisitorTouch) => {
          steps.push([t, changes, stored]);
          const r = await commitTouches(account.id, [t]);
          expect(r).toEqual(
            changes
              ? { ok: true, remaining: 100, firstTouches: ["v1"] }
              : { ok: true, remaining: 100 },
          );
          if (!changes) expect(r && "firstTouches" in r).toBe(false);
          expect(await store.getFirstTouches(site.id, ["v1"])).toEqual([stored]);
        };
        const internal200 = bareTouch(site.id, "v1", {
          ts: T0 + 200,
          internal: true,
          channel: "Direct",
          landingPage: "https://example.com/a",
        });
        // None stored: an internal touch is set.
        await step(internal200, true, internal200);
        // A later internal one does not replace it.
        await step({ ...internal200, ts: T0 + 300, landingPage: "https://x/" }, false, internal200);
        // The same time, internal: a tie keeps the stored one.
        await step({ ...internal200, landingPage: "https://tie/" }, false, internal200);
        // An earlier internal one does.
        const internal50 = { ...internal200, ts: T0 + 50, landingPage: "https://example.com/b" };
        await step(internal50, true, internal50);
        // A non-internal one beats any internal one, even later.
        const organic400 = touch(site.id, "v1", { ts: T0 + 400 });
        await step(organic400, true, organic400);
        // An internal one never beats a non-internal one, even earlier.
        await step({ ...internal50, ts: T0 + 1 }, false, organic400);
        // A later non-internal one does not replace it.
        await step(touch(site.id, "v1", { ts: T0 + 500, channel: "Email" }), false, organic400);
        // The same time, non-internal: a tie keeps the stored one.
        await step(touch(site.id, "v1", { ts: T0 + 400, channel: "Social" }), false, organic400);
        // An earlier non-internal one replaces it whole, optional fields included.
        const referral300 = bareTouch(site.id, "v1", {
          ts: T0 + 300,
          channel: "Referral",
          landingPage: "https://example.com/$landing",
        });
        await step(referral300, true, referral300);
        const [stored] = await store.getFirstTouches(site.id, ["v1"]);
        for (const field of ["source", "medium", "campaign"] as const) {
          expect(stored?.[field], field).toBeUndefined();
        }
        // Values that look like operators or field paths are stored as given.
        const dollars = touch(site.id, "v1", {
          ts: T0 + 299,
          channel: "$channel",
          source: "$source",
          medium: "$$REMOVE",
          campaign: "$literal",
          landingPage: "$landing_page",
        });
        await step(dollars, true, dollars);
        expect(steps).toHaveLength(10);
      });

      it("reports in firstTouches only the visitors each group set or improved", async () => {
        const { account, site } = await newSite();
        const other = await newSite();
        const results = await store.commitEvents([
          group(account.id, [], {
            ceiling: 100,
            countable: 0,
            touches: [
              touch(site.id, "vA", { ts: T0 + 100 }),
              touch(site.id, "vB", { ts: T0 + 100, internal: true, channel: "Direct" }),
            ],
          }),
          // vA later: no change; vB non-internal: improves.
          group(account.id, [], {
            ceiling: 100,
            countable: 0,
            touches: [
              touch(site.id, "vA", { ts: T0 + 200 }),
              touch(site.id, "vB", { ts: T0 + 300, channel: "Email" }),
            ],
          }),
          // vA earlier: improves (a later group of the same batch).
          group(account.id, [], {
            ceiling: 100,
            countable: 0,
            touches: [touch(site.id, "vA", { ts: T0 + 50, channel: "Paid Search" })],
          }),
          // No change at all: no firstTouches key.
          group(account.id, [], {
            ceiling: 100,
            countable: 0,
            touches: [
              touch(site.id, "vA", { ts: T0 + 60 }),
              touch(site.id, "vB", { ts: T0 + 900 }),
            ],
          }),
          // An empty list, and no list.
          group(account.id, [], { ceiling: 100, countable: 0, touches: [] }),
          group(account.id, [], { ceiling: 100, countable: 0 }),
          // Refused by quota: its touches are not written.
          group(
            account.id,
            [1, 2, 3, 4].map((n) => event(site.id, `e${n}`)),
            { ceiling: 3, touches: [touch(site.id, "vC"), touch(site.id, "vA", { ts: T0 })] },
          ),
          // Same visitor id on another site: a touch of its own.
          group(other.account.id, [event(other.site.id, "pageview")], {
            ceiling: 10,
            touches: [touch(other.site.id, "vA", { ts: T0 + 999 })],
          }),
        ]);
        expect(results).toEqual([
          { ok: true, remaining: 100, firstTouches: ["vA", "vB"] },
          { ok: true, remaining: 100, firstTouches: ["vB"] },
          { ok: true, remaining: 100, firstTouches: ["vA"] },
          { ok: true, remaining: 100 },
          { ok: true, remaining: 100 },
          { ok: true, remaining: 100 },
          { ok: false, reason: "quota_exceeded", remaining: 3 },
          { ok: true, remaining: 9, firstTouches: ["vA"] },
        ]);
        for (const i of [3, 4, 5])
          expect(Object.keys(results[i] ?? {}).sort()).toEqual(["ok", "remaining"]);
        expect(await firstTouches(site.id, ["vA", "vB", "vC"])).toEqual([
          touch(site.id, "vA", { ts: T0 + 50, channel: "Paid Search" }),
          touch(site.id, "vB", { ts: T0 + 300, channel: "Email" }),
        ]);
        expect(await firstTouches(other.site.id, ["vA", "vB"])).toEqual([
          touch(other.site.id, "vA", { ts: T0 + 999 }),
        ]);
        // The refused group's events are not written either.
        expect(await store.listEvents(site.id, 10)).toEqual([]);
        // Across calls: the stored touch is what a new one is compared with.
        expect(
          await store.commitEvents([
            group(account.id, [], {
              ceiling: 100,
              countable: 0,
              touches: [touch(site.id, "vA", { ts: T0 + 51 }), touch(site.id, "vC", { ts: T0 })],
            }),
          ]),
        ).toEqual([{ ok: true, remaining: 100, firstTouches: ["vC"] }]);
      });

      it("a group counted against the quota reports its touches with its remaining count", async () => {
        const { account, site } = await newSite();
        const results = await store.commitEvents([
          group(account.id, [event(site.id, "pageview", { visitorId: "vq" })], {
            ceiling: 2,
            touches: [touch(site.id, "vq")],
          }),
          group(account.id, [event(site.id, "pageview", { visitorId: "vr" })], {
            ceiling: 2,
            touches: [touch(site.id, "vr")],
          }),
          group(account.id, [event(site.id, "pageview", { visitorId: "vs" })], {
            ceiling: 2,
            touches: [touch(site.id, "vs")],
          }),
        ]);
        expect(results).toEqual([
          { ok: true, remaining: 1, firstTouches: ["vq"] },
          { ok: true, remaining: 0, firstTouches: ["vr"] },
          { ok: false, reason: "quota_exceeded", remaining: 0 },
        ]);
        expect((await firstTouches(site.id, ["vq", "vr", "vs"])).map((t) => t.visitorId)).toEqual([
          "vq",
          "vr",
        ]);
      });

      it("getFirstTouches: the asked visitors' touches (in the domain's order: by time then visitor id)", async () => {
        const { account, site } = await newSite();
        const other = await newSite();
        await commitTouches(account.id, [
          touch(site.id, "v_c", { ts: T0 + 10 }),
          touch(site.id, "v_b", { ts: T0 + 20 }),
          touch(site.id, "v_a", { ts: T0 + 20 }),
          touch(site.id, "v_z", { ts: T0 + 5, internal: true }),
          touch(other.site.id, "v_d", { ts: T0 }),
        ]);
        expect(
          await firstTouches(site.id, ["v_a", "v_b", "v_c", "v_d", "v_unknown", "v_a"]),
        ).toEqual([
          touch(site.id, "v_c", { ts: T0 + 10 }),
          touch(site.id, "v_a", { ts: T0 + 20 }),
          touch(site.id, "v_b", { ts: T0 + 20 }),
        ]);
        expect(await store.getFirstTouches(site.id, ["v_z"])).toEqual([
          touch(site.id, "v_z", { ts: T0 + 5, internal: true }),
        ]);
        expect(await store.getFirstTouches(site.id, [])).toEqual([]);
        expect(await store.getFirstTouches(uid("site"), ["v_a"])).toEqual([]);
      });
    });

    describe("customer-visitor links", () => {
      it("keeps the earliest linkedAt and the strongest via of each link", async () => {
        const { site } = await newSite();
        const customerId = uid("cus");
        await store.linkCustomerVisitors(site.id, customerId, [
          { visitorId: "v1", via: "customer", linkedAt: T0 + 100 },
          { visitorId: "v2", via: "visitor_id", linkedAt: T0 + 50 },
        ]);
        expect(await store.getCustomerVisitors(site.id, customerId)).toEqual([
          { visitorId: "v2", via: "visitor_id", linkedAt: T0 + 50 },
          { visitorId: "v1", via: "customer", linkedAt: T0 + 100 },
        ]);
        // Stronger and later: the via changes, the time stays.
        await store.linkCustomerVisitors(site.id, customerId, [
          { visitorId: "v1", via: "user_id", linkedAt: T0 + 200 },
        ]);
        // Weaker and earlier: the time changes, the via stays.
        await store.linkCustomerVisitors(site.id, customerId, [
          { visitorId: "v1", via: "visitor_id", linkedAt: T0 + 10 },
          { visitorId: "v2", via: "customer", linkedAt: T0 + 5 },
        ]);
        // Weaker and later: nothing changes.
        await store.linkCustomerVisitors(site.id, customerId, [
          { visitorId: "v2", via: "customer", linkedAt: T0 + 500 },
        ]);
        // visitor_id beats customer.
        await store.linkCustomerVisitors(site.id, customerId, [
          { visitorId: "v3", via: "customer", linkedAt: T0 + 10 },
        ]);
        await store.linkCustomerVisitors(site.id, customerId, [
          { visitorId: "v3", via: "visitor_id", linkedAt: T0 + 10 },
        ]);
        // Several links of one visitor in one call merge the same way.
        await store.linkCustomerVisitors(site.id, customerId, [
          { visitorId: "v4", via: "customer", linkedAt: T0 + 30 },
          { visitorId: "v4", via: "user_id", linkedAt: T0 + 40 },
          { visitorId: "v4", via: "visitor_id", linkedAt: T0 + 35 },
        ]);
        await store.linkCustomerVisitors(site.id, customerId, []);
        expect(await store.getCustomerVisitors(site.id, customerId)).toEqual([
          { visitorId: "v2", via: "visitor_id", linkedAt: T0 + 5 },
          { visitorId: "v1", via: "user_id", linkedAt: T0 + 10 },
          { visitorId: "v3", via: "visitor_id", linkedAt: T0 + 10 },
          { visitorId: "v4", via: "user_id", linkedAt: T0 + 30 },
        ]);
        expect(await store.getCustomerVisitors(site.id, uid("cus"))).toEqual([]);
        expect(await store.getCustomerVisitors(uid("site"), customerId)).toEqual([]);
      });

      it("concurrent links of one visitor agree on the earliest time and strongest via", async () => {
        const { site } = await newSite();
        const customerId = uid("cus");
        const kinds = ["customer", "visitor_id", "user_id"] as const;
        await Promise.all(
          Array.from({ length: 12 }, (_, i) =>
            store.linkCustomerVisitors(site.id, customerId, [
              { visitorId: "v", via: kinds[i % 3] ?? "customer", linkedAt: T0 + 100 - i },
            ]),
          ),
        );
        expect(await store.getCustomerVisitors(site.id, customerId)).toEqual([
          { visitorId: "v", via: "user_id", linkedAt: T0 + 89 },
        ]);
      });

      it("findCustomersToReattribute: by linked visitor or by the customer's user id, sorted", async () => {
        const { site } = await newSite();
        const other = await newSite();
        const base = uid("cus");
        const [a, b, c, d, e] = ["a", "b", "c", "d", "e"].map((x) => `${base}_${x}`) as [
          string,
          string,
          string,
          string,
          string,
        ];
        const withUser = (customerId: string, userId: string, siteId = site.id): PaymentWrite =>
          write(payment(siteId, uid("pay"), { customerId }), {
            customer: { siteId, customerId, userId, at: T0 },
          });
        await store.commitPayments([
          withUser(a, "u_1"),
          withUser(e, "u_2"),
          withUser(d, "u_1", other.site.id),
          write(payment(site.id, uid("pay"), { customerId: b })),
        ]);
        await store.linkCustomerVisitors(site.id, c, [
          { visitorId: "v1", via: "visitor_id", linkedAt: T0 },
          { visitorId: "v2", via: "customer", linkedAt: T0 },
        ]);
        await store.linkCustomerVisitors(site.id, b, [
          { visitorId: "v1", via: "user_id", linkedAt: T0 },
        ]);
        await store.linkCustomerVisitors(other.site.id, d, [
          { visitorId: "v3", via: "user_id", linkedAt: T0 },
        ]);
        const find = (visitorIds: string[], userIds: string[]) =>
          store.findCustomersToReattribute(site.id, { visitorIds, userIds });
        expect(await find(["v1"], [])).toEqual([b, c]);
        expect(await find(["v2"], [])).toEqual([c]);
        expect(await find(["v3"], [])).toEqual([]);
        expect(await find([], ["u_1"])).toEqual([a]);
        expect(await find([], ["u_2", "u_1", "u_2"])).toEqual([a, e]);
        expect(await find(["v2", "v1", "v9"], ["u_2", "u_9"])).toEqual([b, c, e]);
        expect(await find(["v1", "v2"], ["u_1", "u_2"])).toEqual([a, b, c, e]);
        expect(await find([], [])).toEqual([]);
        expect(
          await store.findCustomersToReattribute(other.site.id, {
            visitorIds: ["v1", "v3"],
            userIds: ["u_1"],
          }),
        ).toEqual([d]);
      });
    });

    describe("attribution", () => {
      const paidSearch: Attribution = {
        channel: "Paid Search",
        source: "google",
        medium: "cpc",
        campaign: "$spring.sale",
        landingPage: "https://example.com/pricing",
        visitorId: "vis_1",
        via: "user_id",
        touchedAt: T0 - 5_000,
      };
      const direct: Attribution = {
        channel: "Direct",
        landingPage: "https://example.com/",
        visitorId: "vis_2",
        via: "customer",
        touchedAt: T0 - 9_000,
      };
      const DAY = 86_400_000;
      const revenue = (siteId: string) => store.revenueByChannel(siteId, T0 - DAY, T0 + DAY);

      it("new payments and customers are unattributed", async () => {
        const { site } = await newSite();
        const p = payment(site.id, uid("pay"), { customerId: uid("cus") });
        await store.commitPayments([write(p)]);
        expect((await store.getPayment(site.id, p.paymentId))?.attribution).toBeUndefined();
        expect((await store.getCustomer(site.id, p.customerId))?.attribution).toBeUndefined();
        expect(await revenue(site.id)).toEqual([
          {
            channel: "unattributed",
            currency: "USD",
            grossMinor: 1999n,
            refundsMinor: 0n,
            chargebacksMinor: 0n,
            payments: 1,
            payingCustomers: 1,
          },
        ]);
      });

      it("setAttribution sets the customer and all its payments, idempotently; clearing unsets them", async () => {
        const { site } = await newSite();
        const customerId = uid("cus");
        const otherCustomer = uid("cus");
        const p1 = payment(site.id, uid("pay"), { customerId, amountMinor: 1000 });
        const p2 = payment(site.id, uid("pay"), { customerId, amountMinor: 300, kind: "refund" });
        const p3 = payment(site.id, uid("pay"), { customerId, status: "pending" });
        const q = payment(site.id, uid("pay"), { customerId: otherCustomer, amountMinor: 50 });
        await store.commitPayments([p1, p2, p3, q].map((p) => write(p)));
        const customerBefore = await store.getCustomer(site.id, customerId);

        await store.setAttribution(site.id, customerId, paidSearch);
        await store.setAttribution(site.id, customerId, paidSearch);
        expect(await store.getCustomer(site.id, customerId)).toEqual({
          ...customerBefore,
          attribution: paidSearch,
        });
        for (const p of [p1, p2, p3]) {
          expect(await store.getPayment(site.id, p.paymentId)).toEqual({
            ...p,
            attribution: paidSearch,
          });
        }
        expect(await store.getPayment(site.id, q.paymentId)).toEqual(q);
        expect((await store.getCustomer(site.id, otherCustomer))?.attribution).toBeUndefined();
        const row = (channel: string, gross: bigint, refunds: bigint, payments: number) => ({
          channel,
          currency: "USD",
          grossMinor: gross,
          refundsMinor: refunds,
          chargebacksMinor: 0n,
          payments,
          payingCustomers: 1,
        });
        expect(await revenue(site.id)).toEqual([
          row("Paid Search", 1000n, 300n, 2),
          row("unattributed", 50n, 0n, 1),
        ]);

        // Another attribution replaces it whole (no stale optional fields).
        await store.setAttribution(site.id, customerId, direct);
        expect((await store.getCustomer(site.id, customerId))?.attribution).toEqual(direct);
        const stored = await store.getPayment(site.id, p1.paymentId);
        expect(stored?.attribution).toEqual(direct);
        expect(stored?.attribution?.source).toBeUndefined();
        expect(stored?.attribution?.campaign).toBeUndefined();
        expect(await revenue(site.id)).toEqual([
          row("Direct", 1000n, 300n, 2),
          row("unattributed", 50n, 0n, 1),
        ]);

        // Clearing: unattributed again, twice.
        await store.setAttribution(site.id, customerId, undefined);
        await store.setAttribution(site.id, customerId, undefined);
        expect(await store.getCustomer(site.id, customerId)).toEqual(customerBefore);
        expect((await store.getCustomer(site.id, customerId))?.attribution).toBeUndefined();
        for (const p of [p1, p2, p3]) {
          const cleared = await store.getPayment(site.id, p.paymentId);
          expect(cleared).toEqual(p);
          expect(cleared?.attribution).toBeUndefined();
        }
        expect(await revenue(site.id)).toEqual([
          { ...row("unattributed", 1050n, 300n, 3), payingCustomers: 2 },
        ]);
      });

      it("a re-sent payment keeps its attribution; a new payment of the customer starts unattributed", async () => {
        const { site } = await newSite();
        const customerId = uid("cus");
        const p = payment(site.id, uid("pay"), { customerId, amountMinor: 700 });
        await store.commitPayments([write(p)]);
        await store.setAttribution(site.id, customerId, paidSearch);
        const resent = { ...p, amountMinor: 800, metadata: {}, updatedAt: T0 + 99 };
        const fresh = payment(site.id, uid("pay"), { customerId, amountMinor: 5 });
        await store.commitPayments([write(resent), write(fresh)]);
        expect(await store.getPayment(site.id, p.paymentId)).toEqual({
          ...resent,
          createdAt: p.createdAt,
          attribution: paidSearch,
        });
        expect(await store.getPayment(site.id, fresh.paymentId)).toEqual(fresh);
        expect((await store.getCustomer(site.id, customerId))?.attribution).toEqual(paidSearch);
        expect(await revenue(site.id)).toEqual([
          {
            channel: "Paid Search",
            currency: "USD",
            grossMinor: 800n,
            refundsMinor: 0n,
            chargebacksMinor: 0n,
            payments: 1,
            payingCustomers: 1,
          },
          {
            channel: "unattributed",
            currency: "USD",
            grossMinor: 5n,
            refundsMinor: 0n,
            chargebacksMinor: 0n,
            payments: 1,
            payingCustomers: 1,
          },
        ]);
      });

      it("setAttribution of an unknown customer creates nothing", async () => {
        const { site } = await newSite();
        const customerId = uid("cus");
        await expect(store.setAttribution(site.id, customerId, direct)).resolves.toBeUndefined();
        expect(await store.getCustomer(site.id, customerId)).toBeUndefined();
        expect(await revenue(site.id)).toEqual([]);
      });
    });

    describe("reports", () => {
      const DAY = 86_400_000;

      it("revenueByChannel: succeeded payments in [from, to) by channel and currency", async () => {
        const { site } = await newSite();
        const other = await newSite();
        const from = T0 + DAY;
        const to = T0 + 2 * DAY;
        const base = uid("cus");
        const [ca, cb, cc] = [`${base}_a`, `${base}_b`, `${base}_c`];
        const p = (over: Partial<PaymentRecord>) =>
          payment(site.id, uid("pay"), { paidAt: from, ...over });
        const payments = [
          // ca, attributed to Paid Search below: two charges, a refund.
          p({ customerId: ca, amountMinor: 1000 }),
          p({ customerId: ca, amountMinor: 500, paidAt: to - 1 }),
          p({ customerId: ca, amountMinor: 300, kind: "refund", paidAt: from + 5 }),
          p({ customerId: ca, amountMinor: 2000, currency: "EUR" }),
          // ca, not succeeded: not counted.
          p({ customerId: ca, amountMinor: 7, status: "pending" }),
          p({ customerId: ca, amountMinor: 11, status: "failed" }),
          p({ customerId: ca, amountMinor: 13, kind: "refund", status: "pending" }),
          // Outside the window: not counted.
          p({ customerId: ca, amountMinor: 17, paidAt: from - 1 }),
          p({ customerId: ca, amountMinor: 19, paidAt: to }),
          // cb, unattributed: a chargeback and a refund only (not a paying customer).
          p({ customerId: cb, amountMinor: 200, kind: "chargeback" }),
          p({ customerId: cb, amountMinor: 40, kind: "refund" }),
          // cc, unattributed: a charge in USD.
          p({ customerId: cc, amountMinor: 900 }),
          p({ customerId: cc, amountMinor: 100 }),
        ];
        await store.commitPayments(payments.map((x) => write(x)));
        // Another site's payment in the window: not counted.
        await store.commitPayments([
          write(payment(other.site.id, uid("pay"), { customerId: ca, paidAt: from })),
        ]);
        await store.setAttribution(site.id, ca, {
          channel: "Paid Search",
          landingPage: "https://example.com/",
          visitorId: "v",
          via: "visitor_id",
          touchedAt: T0,
        });
        const row = (r: Partial<RevenueRow> & Pick<RevenueRow, "channel" | "currency">) => ({
          grossMinor: 0n,
          refundsMinor: 0n,
          chargebacksMinor: 0n,
          payments: 0,
          payingCustomers: 0,
          ...r,
        });
        expect(await store.revenueByChannel(site.id, from, to)).toEqual([
          row({
            channel: "Paid Search",
            currency: "EUR",
            grossMinor: 2000n,
            payments: 1,
            payingCustomers: 1,
          }),
          row({
            channel: "Paid Search",
            currency: "USD",
            grossMinor: 1500n,
            refundsMinor: 300n,
            payments: 3,
            payingCustomers: 1,
          }),
          row({
            channel: "unattributed",
            currency: "USD",
            grossMinor: 1000n,
            refundsMinor: 40n,
            chargebacksMinor: 200n,
            payments: 4,
            payingCustomers: 1,
          }),
        ]);
        // The window is half-open: from is in, to is out.
        expect(await store.revenueByChannel(site.id, to, to + DAY)).toEqual([
          row({
            channel: "Paid Search",
            currency: "USD",
            grossMinor: 19n,
            payments: 1,
            payingCustomers: 1,
          }),
        ]);
        expect(await store.revenueByChannel(site.id, from - 1, from)).toEqual([
          row({
            channel: "Paid Search",
            currency: "USD",
            grossMinor: 17n,
            payments: 1,
            payingCustomers: 1,
          }),
        ]);
        expect(await store.revenueByChannel(site.id, from, from)).toEqual([]);
        expect(await store.revenueByChannel(uid("site"), from, to)).toEqual([]);
        for (const r of await store.revenueByChannel(site.id, from, to)) {
          expect(typeof r.grossMinor).toBe("bigint");
          expect(typeof r.refundsMinor).toBe("bigint");
          expect(typeof r.chargebacksMinor).toBe("bigint");
        }
      });

      it("revenueByChannel sums exactly past 2^53", async () => {
        const { site } = await newSite();
        const customerId = uid("cus");
        const E15 = 1_000_000_000_000_000;
        // Ten charges of 1e15 + i: 1e16 + 45 (odd, so no double can hold it).
        const charges = Array.from({ length: 10 }, (_, i) =>
          payment(site.id, uid("pay"), { customerId, amountMinor: E15 + i }),
        );
        const refunds = [MAX_SAFE, MAX_SAFE - 2, 3].map((amountMinor) =>
          payment(site.id, uid("pay"), { customerId, amountMinor, kind: "refund" }),
        );
        const chargebacks = [MAX_SAFE, MAX_SAFE].map((amountMinor) =>
          payment(site.id, uid("pay"), { customerId, amountMinor, kind: "chargeback" }),
        );
        await store.commitPayments([...charges, ...refunds, ...chargebacks].map((p) => write(p)));
        const rows = await store.revenueByChannel(site.id, T0, T0 + 1);
        expect(rows).toEqual([
          {
            channel: "unattributed",
            currency: "USD",
            grossMinor: 10_000_000_000_000_045n,
            refundsMinor: 18_014_398_509_481_983n,
            chargebacksMinor: 18_014_398_509_481_982n,
            payments: 15,
            payingCustomers: 1,
          },
        ]);
        expect(rows[0]?.grossMinor).toBe(BigInt(E15) * 10n + 45n);
        expect(rows[0]?.refundsMinor).toBe(2n * BigInt(MAX_SAFE) + 1n);
      });

      it("mrrTotals: active and past_due subscriptions with amount and interval, running at `at`", async () => {
        const { site } = await newSite();
        const other = await newSite();
        const at = T0 + 10 * DAY;
        const subscriptions: SubscriptionPatch[] = [];
        const sub = (over: Partial<SubscriptionPatch>, siteId = site.id) => {
          subscriptions.push({
            siteId,
            subscriptionId: uid("sub"),
            customerId: uid("cus"),
            currency: "USD",
            interval: "month",
            amountMinor: 1000,
            status: "active",
            startedAt: T0,
            defaults: { status: "active", startedAt: T0 },
            at: T0,
            ...over,
          });
        };
        // Counted.
        sub({});
        sub({ status: "past_due", amountMinor: 500, startedAt: at });
        sub({ amountMinor: 250, endedAt: at + 1 });
        sub({ interval: "year", amountMinor: 12_000 });
        sub({ currency: "EUR", amountMinor: 900 });
        sub({ currency: "EUR", amountMinor: 100, status: undefined });
        sub({ interval: "week", amountMinor: MAX_SAFE });
        sub({ interval: "week", amountMinor: MAX_SAFE - 4 });
        // Not counted.
        for (const status of ["trialing", "paused", "canceled", "ended"] as const) {
          sub({ status, amountMinor: 1 });
        }
        sub({ amountMinor: 2, startedAt: at + 1 });
        sub({ amountMinor: 3, endedAt: at });
        sub({ amountMinor: 4, endedAt: at - 1 });
        sub({ amountMinor: undefined });
        sub({ interval: undefined, amountMinor: 5 });
        sub({ amountMinor: 6 }, other.site.id);
        await store.commitPayments(
          subscriptions.map((s) =>
            write(
              payment(s.siteId, uid("pay"), {
                customerId: s.customerId,
                subscriptionId: s.subscriptionId,
              }),
              { subscription: s },
            ),
          ),
        );
        expect(await store.mrrTotals(site.id, at)).toEqual([
          { currency: "EUR", interval: "month", amountMinor: 1000n, subscriptions: 2 },
          { currency: "USD", interval: "month", amountMinor: 1750n, subscriptions: 3 },
          {
            currency: "USD",
            interval: "week",
            amountMinor: 18_014_398_509_481_978n,
            subscriptions: 2,
          },
          { currency: "USD", interval: "year", amountMinor: 12_000n, subscriptions: 1 },
        ]);
        // Before the past_due one started (the one ending at `at` still runs),
        // and once the one ending at + 1 has ended (the one starting then runs).
        expect(await store.mrrTotals(site.id, at - 1)).toContainEqual({
          currency: "USD",
          interval: "month",
          amountMinor: 1253n,
          subscriptions: 3,
        });
        expect(await store.mrrTotals(site.id, at + 1)).toContainEqual({
          currency: "USD",
          interval: "month",
          amountMinor: 1502n,
          subscriptions: 3,
        });
        expect(await store.mrrTotals(site.id, T0 - 1)).toEqual([]);
        expect(await store.mrrTotals(uid("site"), at)).toEqual([]);
      });
    });
  });
}
