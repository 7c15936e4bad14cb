/**
 * The store contract: what every adapter of the port (src/store/port.ts) must
 * do, asserted exactly. Each adapter's test file calls describeStoreContract
 * with a function that opens a fresh store.
 *
 * Tests share one store per suite and never reuse ids (see `uid`), so they do
 * not depend on each other or on their order.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type {
  AccountRecord,
  ApiKeyRecord,
  CustomerPatch,
  EventGroup,
  EventRecord,
  IdentityLink,
  PaymentRecord,
  PaymentWrite,
  SiteRecord,
  Store,
  SubscriptionPatch,
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
  options: { ceiling: number; countable?: number; links?: IdentityLink[]; month?: string },
): EventGroup {
  return {
    accountId,
    month: options.month ?? MONTH,
    ceiling: options.ceiling,
    countable: options.countable ?? events.length,
    events,
    links: options.links ?? [],
  };
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
        expect(ok.map((r) => r?.remaining).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual([
          0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
        ]);
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
        expect(await store.getSubscription(site.id, subscriptionId)).toEqual({
          ...base,
          customerId: "cus_2",
          currency: "GBP",
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
  });
}
