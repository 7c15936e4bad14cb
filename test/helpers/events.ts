/** Shared helpers of the events tests. */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { expect } from "vitest";
import { ReportsService, type StoredEvent } from "../../gen/ingest/v1/reports_pb.js";
import type { EventRecord } from "../../src/domain/store/records.js";
import type { Store } from "../../src/store/port.js";
import { BROWSER_UA, IPHONE_UA } from "./fixtures.js";
import { ADMIN_TOKEN, postJson, TEST_NOW, type Tenant } from "./test-server.js";

export { BROWSER_UA, IPHONE_UA };

/** POSTs to /api/v1/events with the tenant's key and a browser User-Agent (unless overridden). */
export function sendEvents(
  baseUrl: string,
  tenant: Pick<Tenant, "key">,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return postJson(`${baseUrl}/api/v1/events`, body, {
    key: tenant.key,
    headers: { "user-agent": BROWSER_UA, ...headers },
  });
}

/** A pageview on example.com. */
export function pageview(siteId: string, extra: Record<string, unknown> = {}) {
  return { s: siteId, e: "pageview", u: "https://example.com/", ...extra };
}

/** A batch of `n` pageviews, each with a distinct path and `p.i`. */
export function batchOf(siteId: string, n: number, extra: Record<string, unknown> = {}) {
  return {
    s: siteId,
    b: Array.from({ length: n }, (_, i) => ({
      e: "pageview",
      u: `https://example.com/${i}`,
      p: { i },
      ...extra,
    })),
  };
}

/** ReportsService.ListEvents over Connect, as an operator would call it. */
export async function listEvents(
  baseUrl: string,
  siteId: string,
  limit = 1000,
): Promise<StoredEvent[]> {
  const client = createClient(
    ReportsService,
    createConnectTransport({ baseUrl, httpVersion: "1.1" }),
  );
  const res = await client.listEvents(
    { siteId, limit },
    { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
  );
  return res.events;
}

/** The 400/403/404/… envelope of a response, for exact assertions. */
export function errorOf(res: { status: number; body: unknown }) {
  return { status: res.status, body: res.body };
}

export function envelope(code: string, message: string) {
  return { ok: false, error: { code, message } };
}

/**
 * Raises an account's counter by `n` directly in the store, as if `n` more
 * events had been counted (by another process: the server under test does
 * not see it happen).
 */
export async function presetUsage(store: Store, accountId: string, month: string, n: number) {
  const [r] = await store.commitEvents([
    { accountId, month, ceiling: Number.MAX_SAFE_INTEGER, countable: n, events: [], links: [] },
  ]);
  expect(r?.ok).toBe(true);
}

/**
 * Writes `n` events of a site straight through the store's commit path, 5,000
 * per commit (HTTP would take minutes for the hundreds of thousands some tests
 * need), `event(j)` giving the j-th; no quota counted. They reach the analytics
 * engine by the feed, as any other write.
 */
export async function commitStraight(
  store: Store,
  siteId: string,
  n: number,
  event: (j: number) => Omit<EventRecord, "siteId">,
): Promise<void> {
  const site = await store.getSite(siteId);
  for (let i = 0; i < n; i += 5000) {
    const events: EventRecord[] = [];
    for (let j = i; j < Math.min(n, i + 5000); j++) events.push({ siteId, ...event(j) });
    await store.commitEvents([
      {
        accountId: site?.accountId ?? "",
        month: "2026-03",
        ceiling: 1e15,
        countable: 0,
        events,
        links: [],
      },
    ]);
  }
}

/**
 * For {@link commitStraight}: `n` pageviews one millisecond apart, the last
 * just before `end`, over 100 pages, from `visitors` visitors in turn.
 */
export function pageviewsUntil(
  end: number,
  n: number,
  visitors: number,
): (j: number) => Omit<EventRecord, "siteId"> {
  return (j) => {
    const ts = end - n + j;
    return {
      name: "pageview",
      url: `https://example.com/p${j % 100}`,
      ts,
      receivedAt: ts,
      visitorId: `v${j % visitors}`,
    };
  };
}

/**
 * Sends pageviews tagged `tags` (path `/<tag>`) in one request with the
 * tenant's key, each at the time `ts(tag)` (TEST_NOW by default), from one
 * browser; expects 204.
 */
export async function sendTagged(
  baseUrl: string,
  tenant: Pick<Tenant, "key" | "siteId">,
  tags: number[],
  ts: (tag: number) => number = () => TEST_NOW,
) {
  const res = await postJson(
    `${baseUrl}/api/v1/events`,
    {
      s: tenant.siteId,
      b: tags.map((t) => ({
        e: "pageview",
        u: `https://example.com/${t}`,
        ts: ts(t),
        ip: "203.0.113.9",
        ua: BROWSER_UA,
      })),
    },
    { key: tenant.key },
  );
  expect(res.status).toBe(204);
}

/** The tag of a pageview `sendTagged` sent, from its URL. */
export const tagOf = (url: string) => Number(new URL(url).pathname.slice(1));

/** Where a customer's server sends: a listening server's URL, a site and its events+payments key. */
export interface SiteDoor {
  url: string;
  siteId: string;
  key: string;
}

/** Sends one event as a customer's server does, for a browser at `ip`; expects the 204. */
export async function sendFrom(door: SiteDoor, event: Record<string, unknown>, ip: string) {
  const res = await postJson(
    `${door.url}/api/v1/events`,
    { s: door.siteId, ip, ua: BROWSER_UA, ...event },
    { key: door.key },
  );
  expect(res.status).toBe(204);
}

/** Records one payment over REST; expects the 200. */
export async function recordPayment(door: SiteDoor, body: Record<string, unknown>) {
  const res = await postJson(`${door.url}/api/v1/payments`, body, { key: door.key });
  expect(res.status).toBe(200);
}
