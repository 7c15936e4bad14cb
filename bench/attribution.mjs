/**
 * Attribution accuracy (`npm run bench:attribution`, issue 22): simulated
 * purchase journeys run through the real service (the app started in this
 * process on a fresh SQLite file, listening on a port, spoken to over HTTP)
 * with its injected clock moved day by day, once cookieless (events carry
 * only the browser's forwarded ip and user agent) and once persistent (the
 * same events also carry each browser's `vid`, as the tracker sends it with
 * `data-persist`). Prints, per journey type and in total, the share of
 * revenue credited to the journey's true first-touch channel.
 *
 * Every journey is sent the way a site's server forwards its visitors'
 * events (POST /api/v1/events with `ip`/`ua`), pays by `customer.user_id`
 * after `$identify`, and is read back with ReportsService.GetPayment.
 * Deterministic: same inputs, same table, at any date.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { createAdmin } from "../src/domain/admin.ts";
import { createSqliteStore } from "../src/store/sqlite/sqlite-store.ts";

const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef";
const DAY = 86_400_000;
/** Day 0 of every journey's calendar: a fixed Monday, 09:00 UTC. */
const START = Date.UTC(2026, 1, 2, 9, 0, 0);
/** Journeys of each type per mode. */
const PER_TYPE = Number(process.env.BENCH_JOURNEYS ?? 25);

const DESKTOP =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";
const PHONE =
  "Mozilla/5.0 (iPhone; CPU iPhone OS 18_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.5 Mobile/15E148 Safari/604.1";

const HOST = "https://shop.example";
const LANDINGS = {
  Email: { u: `${HOST}/?utm_source=newsletter&utm_medium=email` },
  "Paid Search": { u: `${HOST}/pricing?utm_source=google&utm_medium=cpc&gclid=abc` },
  "Organic Social": { u: `${HOST}/blog/launch`, r: "https://www.facebook.com/" },
  Direct: { u: `${HOST}/` },
};

/**
 * Journey types: steps of [day, browser, what], where `what` is a landing
 * channel, "return" (a direct visit), "identify" or "pay". `single`: one
 * browser (the target is 100% in persistent mode).
 */
const JOURNEYS = [
  {
    type: "same day",
    truth: "Email",
    single: true,
    steps: [
      [0, "a", "Email"],
      [0, "a", "return"],
      [0, "a", "identify"],
      [0, "a", "pay"],
    ],
  },
  {
    type: "identified early",
    truth: "Paid Search",
    single: true,
    steps: [
      [0, "a", "Paid Search"],
      [0, "a", "identify"],
      [5, "a", "return"],
      [5, "a", "pay"],
    ],
  },
  {
    type: "returns days later",
    truth: "Email",
    single: true,
    steps: [
      [0, "a", "Email"],
      [3, "a", "return"],
      [3, "a", "identify"],
      [3, "a", "pay"],
    ],
  },
  {
    type: "several returns",
    truth: "Organic Social",
    single: true,
    steps: [
      [0, "a", "Organic Social"],
      [2, "a", "return"],
      [6, "a", "return"],
      [6, "a", "identify"],
      [13, "a", "pay"],
    ],
  },
  {
    type: "campaign after a direct first visit",
    truth: "Direct",
    single: true,
    steps: [
      [0, "a", "Direct"],
      [4, "a", "Email"],
      [4, "a", "identify"],
      [4, "a", "pay"],
    ],
  },
  {
    type: "several devices joined by identify",
    truth: "Paid Search",
    single: false,
    steps: [
      [0, "phone", "Paid Search"],
      [2, "phone", "return"],
      [2, "phone", "identify"],
      [5, "laptop", "return"],
      [5, "laptop", "identify"],
      [5, "laptop", "pay"],
    ],
  },
];

/** A settable clock, injected into the app. */
function createClock(start) {
  let now = start;
  return { now: () => now, set: (ms) => (now = ms) };
}

async function startService() {
  const dir = mkdtempSync(join(tmpdir(), "bench-attribution-"));
  const file = join(dir, "ingest.sqlite");
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    STORE_URL: `sqlite:${file}`,
    ADMIN_TOKEN,
    LOG_LEVEL: "silent",
    INGEST_FLUSH_MS: "0",
  });
  const store = createSqliteStore(file);
  const clock = createClock(START);
  const app = await createApp({ config, store, clock });
  const port = await app.listen();
  const admin = createAdmin({ store, clock });
  const { accountId, ownerUserId } = await admin.createAccount({
    name: "Bench shop",
    plan: "scale",
    ownerEmail: "owner@shop.example",
  });
  const { siteId } = await admin.createSite({ accountId, hostnames: ["shop.example"] });
  const { key } = await admin.createKey({
    siteId,
    name: "bench",
    scopes: ["events", "payments"],
    actorUserId: ownerUserId,
  });
  return {
    url: `http://127.0.0.1:${port}`,
    clock,
    siteId,
    key,
    async close() {
      await app.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function post(url, body, authorization) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Every step of every journey of a mode, in time order (the clock only moves forward). */
function plan(persistent) {
  const steps = [];
  const journeys = [];
  let n = 0;
  for (const [t, type] of JOURNEYS.entries()) {
    for (let k = 0; k < PER_TYPE; k++) {
      n += 1;
      const j = {
        type: type.type,
        truth: type.truth,
        user: `user_${n}`,
        paymentId: `pay_${n}`,
        // Amounts vary so the share is of revenue, not of payments.
        amount: 20 + ((n * 37) % 180),
        browsers: {},
      };
      journeys.push(j);
      const startDay = (n * 7) % 10;
      for (const [s, [day, browser, what]] of type.steps.entries()) {
        j.browsers[browser] ??= {
          // Each browser its own address (a phone on the mobile network).
          ip: `${browser === "phone" ? "172.16" : `10.${t}`}.${Math.floor(n / 250)}.${n % 250}`,
          ua: browser === "phone" ? PHONE : DESKTOP,
          vid: persistent ? `bench_${n}_${browser}_0123456789` : undefined,
        };
        // Minutes apart within a day, in step order.
        steps.push({
          at: START + (startDay + day) * DAY + (n % 60) * 60_000 + s * 5 * 60_000,
          j,
          browser,
          what,
        });
      }
    }
  }
  steps.sort((a, b) => a.at - b.at);
  return { steps, journeys };
}

async function runMode(persistent) {
  const svc = await startService();
  const auth = `Bearer ${svc.key}`;
  const { steps, journeys } = plan(persistent);
  try {
    for (const { at, j, browser, what } of steps) {
      svc.clock.set(at);
      const b = j.browsers[browser];
      const who = { ip: b.ip, ua: b.ua, ...(b.vid ? { vid: b.vid } : {}) };
      if (what === "pay") {
        await post(
          `${svc.url}/api/v1/payments`,
          {
            payment_id: j.paymentId,
            amount: j.amount,
            currency: "EUR",
            kind: "charge",
            paid_at: new Date(at).toISOString(),
            customer: { id: `cus_${j.user}`, user_id: j.user },
          },
          auth,
        );
      } else if (what === "identify") {
        await post(
          `${svc.url}/api/v1/events`,
          { s: svc.siteId, e: "$identify", u: `${HOST}/account`, uid: j.user, ...who },
          auth,
        );
      } else if (what === "return") {
        await post(
          `${svc.url}/api/v1/events`,
          { s: svc.siteId, e: "pageview", u: `${HOST}/`, ...who },
          auth,
        );
      } else {
        const landing = LANDINGS[what];
        await post(
          `${svc.url}/api/v1/events`,
          { s: svc.siteId, e: "pageview", ...landing, ...who },
          auth,
        );
      }
    }
    for (const j of journeys) {
      const { payment } = await post(
        `${svc.url}/ingest.v1.ReportsService/GetPayment`,
        { siteId: svc.siteId, paymentId: j.paymentId },
        `Bearer ${ADMIN_TOKEN}`,
      );
      j.credited = payment.channel;
    }
  } finally {
    await svc.close();
  }
  return journeys;
}

function shares(journeys) {
  const by = new Map();
  const add = (key, j) => {
    const e = by.get(key) ?? { revenue: 0, right: 0, wrong: new Map() };
    e.revenue += j.amount;
    if (j.credited === j.truth) e.right += j.amount;
    else e.wrong.set(j.credited, (e.wrong.get(j.credited) ?? 0) + 1);
    by.set(key, e);
  };
  for (const j of journeys) {
    add(j.type, j);
    add("total", j);
  }
  return by;
}

const pct = (e) => `${((100 * e.right) / e.revenue).toFixed(1)}%`;
const wrongly = (e) => [...e.wrong].map(([channel, n]) => `${n}× ${channel}`).join(", ") || "–";

const started = performance.now();
const cookieless = shares(await runMode(false));
const persistent = shares(await runMode(true));
const rows = [...JOURNEYS.map((t) => t.type), "total"];
const lines = [
  "| Journey (true first touch) | Cookieless | Persistent (`vid`) | Cookieless credited instead |",
  "| --- | ---: | ---: | --- |",
  ...rows.map((type) => {
    const t = JOURNEYS.find((x) => x.type === type);
    const label = t ? `${type} (${t.truth})` : "**total**";
    return `| ${label} | ${pct(cookieless.get(type))} | ${pct(persistent.get(type))} | ${wrongly(cookieless.get(type))} |`;
  }),
];
console.log(
  `Share of revenue credited to the true first-touch channel (${PER_TYPE} journeys per type and mode):\n`,
);
console.log(lines.join("\n"));
console.log(`\n${((performance.now() - started) / 1000).toFixed(1)} s`);
