/**
 * `demo`'s month of data: a few thousand visitors over the last 30 days
 * (today included), sent through the service's own doors to an in-process
 * server on the same store, so every rule, enrichment, rollup and attribution
 * runs as in production: events to `POST /api/v1/events` (with each visitor's
 * IP and user agent), payments to `POST /api/v1/payments`, and Stripe's
 * deliveries, signed with the connector's secret by Stripe's own SDK, to the
 * connector's URL. The server's clock is moved hour by hour through the month
 * (events older than an hour would be re-dated to their receipt), ending at
 * `end` (now). Everything random comes from one seeded PRNG: the same seed and
 * end give the same data.
 */
import Stripe from "stripe";

/** Where the month goes: a listening server whose clock this loader moves. */
export interface DemoTarget {
  url: string;
  key: string;
  siteId: string;
  /** The connector's id and signing secret (a Stripe connector of the site). */
  connector: { id: string; secret: string };
  /** Sets the server's clock (epoch ms). */
  setNow(ms: number): void;
}

/** What was sent, for the CLI's summary line and the tests. */
export interface DemoSummary {
  visitors: number;
  events: number;
  identifies: number;
  /** Charges, by either path; the refunds and the chargeback are counted apart. */
  payments: number;
  stripeDeliveries: number;
  refunds: number;
  chargebacks: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
export const DEMO_DAYS = 30;
export const DEMO_SEED = 20_260_301;
/** The site's hostname the pages are on (the demo site has example.com and localhost). */
const ORIGIN = "https://example.com";

/** mulberry32: a small, fast, seeded PRNG (uniform in [0, 1)). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** How visitors arrive: the referrer and landing URL's query of each channel, with its weight. */
const ARRIVALS: { weight: number; referrer?: string; query?: string; landing: string }[] = [
  { weight: 22, referrer: "https://www.google.com/", landing: "/" },
  { weight: 6, referrer: "https://www.bing.com/", landing: "/blog/attribution-101" },
  { weight: 4, referrer: "https://duckduckgo.com/", landing: "/pricing" },
  {
    weight: 10,
    referrer: "https://www.google.com/",
    query: "utm_source=google&utm_medium=cpc&utm_campaign=spring_sale&gclid=demo",
    landing: "/pricing",
  },
  {
    weight: 8,
    query: "utm_source=newsletter&utm_medium=email&utm_campaign=weekly_digest",
    landing: "/blog/attribution-101",
  },
  { weight: 7, referrer: "https://news.ycombinator.com/", landing: "/" },
  {
    weight: 6,
    referrer: "https://t.co/",
    query: "utm_source=twitter&utm_medium=social&utm_campaign=launch",
    landing: "/",
  },
  { weight: 5, referrer: "https://www.linkedin.com/", landing: "/features" },
  { weight: 4, referrer: "https://www.facebook.com/", landing: "/" },
  { weight: 4, referrer: "https://chatgpt.com/", landing: "/pricing" },
  { weight: 3, referrer: "https://www.youtube.com/", landing: "/features" },
  { weight: 3, referrer: "https://indiehackers.com/post/how-we-grew", landing: "/" },
  { weight: 18, landing: "/" },
];

/** Addresses in networks the bundled DB-IP file places in these countries. */
const NETWORKS: { weight: number; prefix: string }[] = [
  { weight: 34, prefix: "8.8.4." }, // US
  { weight: 12, prefix: "81.2.69." }, // GB
  { weight: 12, prefix: "85.214.132." }, // DE
  { weight: 10, prefix: "90.84.12." }, // FR
  { weight: 6, prefix: "133.11.0." }, // JP
  { weight: 6, prefix: "177.43.10." }, // BR
  { weight: 5, prefix: "145.97.1." }, // NL
  { weight: 5, prefix: "24.114.2." }, // CA
];

/** Desktop and mobile browsers as they identify themselves (none is a bot). */
const AGENTS: { weight: number; ua: string; width: number }[] = [
  {
    weight: 38,
    ua: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    width: 1536,
  },
  {
    weight: 16,
    ua: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
    width: 1440,
  },
  {
    weight: 8,
    ua: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    width: 1920,
  },
  {
    weight: 22,
    ua: "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    width: 390,
  },
  {
    weight: 12,
    ua: "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
    width: 412,
  },
  {
    weight: 4,
    ua: "Mozilla/5.0 (iPad; CPU OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
    width: 820,
  },
];

const LANGUAGES = ["en-US", "en-GB", "de-DE", "fr-FR", "ja-JP", "pt-BR", "nl-NL"];

/** What a paying customer buys. */
const OFFERS = [
  { weight: 30, plan: "Pro", interval: "month", amount: 49, currency: "USD" },
  { weight: 15, plan: "Pro", interval: "month", amount: 45, currency: "EUR" },
  { weight: 8, plan: "Pro", interval: "year", amount: 490, currency: "USD" },
  { weight: 27, plan: "Lifetime report", amount: 149, currency: "USD" },
  { weight: 20, plan: "Lifetime report", amount: 129, currency: "EUR" },
] as const;

type Rng = () => number;

function pick<T extends { weight: number }>(rng: Rng, items: readonly T[]): T {
  const total = items.reduce((s, i) => s + i.weight, 0);
  let r = rng() * total;
  for (const item of items) {
    r -= item.weight;
    if (r < 0) return item;
  }
  return items[items.length - 1] as T;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(".000Z", "Z");
const seconds = (ms: number) => Math.floor(ms / 1000);

async function post(
  url: string,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  return { status: res.status, text: await res.text() };
}

/** A paying customer waiting for their payments: who, when, what, and by which path. */
interface Purchase {
  at: number;
  userId: string;
  email: string;
  country: string;
  offer: (typeof OFFERS)[number];
  viaStripe: boolean;
  n: number;
}

/**
 * Sends the month. Visitors arrive with a weekly rhythm and a slow growth;
 * about one in three reaches the pricing page, some sign up (`signup`, then
 * `$identify`), some start a checkout, and a few of those pay: through the
 * payments endpoint, or through Stripe (customer, subscription, invoice and
 * charge deliveries). One REST payment is refunded, one Stripe charge is
 * refunded and one disputed and lost (a chargeback).
 */
export async function loadDemoMonth(
  target: DemoTarget,
  options: { end: number; seed?: number; days?: number } = { end: Date.now() },
): Promise<DemoSummary> {
  const rng = seededRandom(options.seed ?? DEMO_SEED);
  const days = options.days ?? DEMO_DAYS;
  const end = options.end;
  const firstDay = Math.floor(end / DAY) * DAY - (days - 1) * DAY;
  const summary: DemoSummary = {
    visitors: 0,
    events: 0,
    identifies: 0,
    payments: 0,
    stripeDeliveries: 0,
    refunds: 0,
    chargebacks: 0,
  };
  const auth = { authorization: `Bearer ${target.key}` };
  const fail = (what: string, r: { status: number; text: string }) => {
    throw new Error(`demo data: ${what} answered ${r.status} ${r.text}`);
  };
  const purchases: Purchase[] = [];
  let ipSerial = 0;

  const sendEvents = async (events: Record<string, unknown>[]) => {
    // Batches of 20 stay well under the 8 KB body limit (and the 50 events of a batch).
    for (let i = 0; i < events.length; i += 20) {
      const b = events.slice(i, i + 20);
      const r = await post(
        `${target.url}/api/v1/events`,
        JSON.stringify({ s: target.siteId, b }),
        auth,
      );
      if (r.status !== 204) fail("POST /api/v1/events", r);
      summary.events += b.length;
    }
  };

  for (let d = 0; d < days; d++) {
    const dayStart = firstDay + d * DAY;
    const weekday = new Date(dayStart).getUTCDay();
    const weekly = weekday === 0 || weekday === 6 ? 0.7 : 1.1;
    const growth = 0.8 + (0.4 * d) / days;
    const visitorsToday = Math.round(95 * weekly * growth * (0.85 + 0.3 * rng()));
    // Whole hours of the day that have begun by `end`.
    const hours = Math.min(24, Math.floor((end - dayStart) / HOUR) + 1);
    for (let h = 0; h < hours; h++) {
      const hourStart = dayStart + h * HOUR;
      const now = Math.min(hourStart + HOUR - 1, end);
      target.setNow(now);
      // More visitors in the (European and American) day than at night.
      const share = h >= 7 && h <= 21 ? 1.4 : 0.4;
      const count = Math.round((visitorsToday / 24) * share * (0.6 + 0.8 * rng()));
      const events: Record<string, unknown>[] = [];
      for (let v = 0; v < count; v++) {
        const start = hourStart + Math.floor(rng() * (now - hourStart) * 0.6);
        // Each event at least a second after the last: the order of a visit is kept.
        let ts = start;
        const step = () => {
          ts = Math.min(now, ts + 1000 + Math.floor(rng() * 90_000));
          return ts;
        };
        const arrival = pick(rng, ARRIVALS);
        const agent = pick(rng, AGENTS);
        ipSerial += 1;
        const ip = `${pick(rng, NETWORKS).prefix}${(ipSerial % 250) + 2}`;
        const visitor = {
          ip,
          ua: agent.ua,
          w: agent.width,
          l: LANGUAGES[Math.floor(rng() * LANGUAGES.length)],
        };
        summary.visitors += 1;
        const landing = `${ORIGIN}${arrival.landing}${arrival.query ? `?${arrival.query}` : ""}`;
        events.push({
          e: "pageview",
          u: landing,
          ...(arrival.referrer ? { r: arrival.referrer } : {}),
          ts,
          ...visitor,
        });
        const page = (path: string, title: string) =>
          events.push({ e: "pageview", u: `${ORIGIN}${path}`, t: title, ts: step(), ...visitor });
        if (rng() < 0.4) page("/features", "Features");
        if (arrival.landing !== "/pricing" && rng() > 0.35) continue;
        if (arrival.landing !== "/pricing") page("/pricing", "Pricing");
        if (rng() > 0.3) continue;
        const userId = `u_demo_${summary.visitors}`;
        events.push({
          e: "signup",
          u: `${ORIGIN}/signup`,
          p: { plan: rng() < 0.5 ? "trial" : "free" },
          ts: step(),
          ...visitor,
        });
        events.push({ e: "$identify", u: `${ORIGIN}/signup`, uid: userId, ts: step(), ...visitor });
        summary.identifies += 1;
        if (rng() > 0.45) continue;
        const offer = pick(rng, OFFERS);
        events.push({
          e: "checkout",
          u: `${ORIGIN}/checkout`,
          p: { plan: offer.plan, currency: offer.currency },
          ts: step(),
          ...visitor,
        });
        if (rng() > 0.55) continue;
        purchases.push({
          at: Math.min(step() + 30_000, now),
          userId,
          email: `customer${summary.visitors}@example.net`,
          country: ["US", "GB", "DE", "FR", "JP", "BR", "NL", "CA"][Math.floor(rng() * 8)] ?? "US",
          offer,
          viaStripe: rng() < 0.4,
          n: purchases.length + 1,
        });
      }
      await sendEvents(events);
      // The hour's purchases, after the visits they come from are stored.
      for (const p of purchases.filter((x) => x.at >= hourStart && x.at <= now)) {
        if (p.viaStripe) await stripePurchase(target, p, summary);
        else await restPurchase(target, p, summary, auth);
      }
    }
  }

  // The month's after-sales, at the end: one REST refund, one Stripe refund, one lost dispute.
  target.setNow(end);
  const rest = purchases.find((p) => !p.viaStripe && p.at < end - 2 * DAY);
  if (rest) {
    const r = await post(
      `${target.url}/api/v1/payments`,
      JSON.stringify({
        payment_id: `pay_demo_${rest.n}_refund`,
        customer: { id: `cus_demo_${rest.n}`, user_id: rest.userId },
        amount: rest.offer.amount,
        currency: rest.offer.currency,
        kind: "refund",
        paid_at: iso(end - HOUR),
        metadata: { demo: "true", refunds: `pay_demo_${rest.n}` },
      }),
      auth,
    );
    if (r.status !== 200) fail("POST /api/v1/payments (refund)", r);
    summary.refunds += 1;
  }
  const stripe = purchases.filter((p) => p.viaStripe && p.at < end - 2 * DAY);
  const [refunded, disputed] = [stripe[0], stripe[1]];
  if (refunded) {
    await deliver(target, summary, "refund.created", end - 2 * HOUR, {
      id: `re_demo_${refunded.n}`,
      object: "refund",
      amount: refunded.offer.amount * 100,
      charge: `ch_demo_${refunded.n}`,
      created: seconds(end - 2 * HOUR),
      currency: refunded.offer.currency.toLowerCase(),
      metadata: {},
      payment_intent: `pi_demo_${refunded.n}`,
      reason: "requested_by_customer",
      status: "succeeded",
    });
    summary.refunds += 1;
  }
  if (disputed) {
    await deliver(target, summary, "charge.dispute.closed", end - 3 * HOUR, {
      id: `dp_demo_${disputed.n}`,
      object: "dispute",
      amount: disputed.offer.amount * 100,
      charge: `ch_demo_${disputed.n}`,
      created: seconds(end - 3 * HOUR),
      currency: disputed.offer.currency.toLowerCase(),
      metadata: {},
      payment_intent: `pi_demo_${disputed.n}`,
      reason: "fraudulent",
      status: "lost",
    });
    summary.chargebacks += 1;
  }
  return summary;
}

/** A purchase through the payments endpoint, with its subscription when it is one. */
async function restPurchase(
  target: DemoTarget,
  p: Purchase,
  summary: DemoSummary,
  auth: Record<string, string>,
): Promise<void> {
  const { offer } = p;
  const subscription =
    "interval" in offer
      ? {
          id: `sub_demo_${p.n}`,
          plan: offer.plan,
          interval: offer.interval,
          amount: offer.amount,
          status: "active",
          started_at: iso(p.at),
          current_period_end: iso(p.at + (offer.interval === "year" ? 365 : 30) * DAY),
        }
      : undefined;
  const r = await post(
    `${target.url}/api/v1/payments`,
    JSON.stringify({
      payment_id: `pay_demo_${p.n}`,
      customer: { id: `cus_demo_${p.n}`, user_id: p.userId, email: p.email, country: p.country },
      amount: offer.amount,
      currency: offer.currency,
      fee: Math.round(offer.amount * 2.9 + 30) / 100,
      kind: "charge",
      paid_at: iso(p.at),
      metadata: { demo: "true", plan: offer.plan },
      ...(subscription ? { subscription } : {}),
    }),
    auth,
  );
  if (r.status !== 200) throw new Error(`demo data: a payment answered ${r.status} ${r.text}`);
  summary.payments += 1;
}

/** A purchase through Stripe: its customer, subscription and invoice when it is one, and the charge. */
async function stripePurchase(target: DemoTarget, p: Purchase, summary: DemoSummary) {
  const { offer } = p;
  const currency = offer.currency.toLowerCase();
  const created = seconds(p.at);
  const customer = `cus_demo_stripe_${p.n}`;
  const metadata = { ingest_user_id: p.userId };
  await deliver(target, summary, "customer.created", p.at, {
    id: customer,
    object: "customer",
    address: { country: p.country },
    created,
    email: p.email,
    metadata,
    name: `Demo customer ${p.n}`,
  });
  if ("interval" in offer) {
    const periodEnd = created + (offer.interval === "year" ? 365 : 30) * 86_400;
    const subscriptionId = `sub_demo_stripe_${p.n}`;
    const price = {
      id: `price_demo_${offer.interval}_${currency}`,
      object: "price",
      currency,
      nickname: offer.plan,
      recurring: { interval: offer.interval, interval_count: 1, usage_type: "licensed" },
      type: "recurring",
      unit_amount: offer.amount * 100,
    };
    await deliver(target, summary, "customer.subscription.created", p.at, {
      id: subscriptionId,
      object: "subscription",
      created,
      currency,
      customer,
      items: {
        object: "list",
        data: [
          {
            id: `si_demo_${p.n}`,
            object: "subscription_item",
            current_period_end: periodEnd,
            current_period_start: created,
            price,
            quantity: 1,
            subscription: subscriptionId,
          },
        ],
      },
      metadata,
      start_date: created,
      status: "active",
    });
    await deliver(target, summary, "invoice.paid", p.at, {
      id: `in_demo_${p.n}`,
      object: "invoice",
      amount_paid: offer.amount * 100,
      billing_reason: "subscription_create",
      created,
      currency,
      customer,
      customer_email: p.email,
      lines: {
        object: "list",
        data: [
          {
            object: "line_item",
            amount: offer.amount * 100,
            period: { start: created, end: periodEnd },
          },
        ],
      },
      parent: {
        type: "subscription_details",
        subscription_details: { metadata, subscription: subscriptionId },
      },
      status: "paid",
      status_transitions: { paid_at: created },
    });
  }
  await deliver(target, summary, "charge.succeeded", p.at, {
    id: `ch_demo_${p.n}`,
    object: "charge",
    amount: offer.amount * 100,
    amount_captured: offer.amount * 100,
    amount_refunded: 0,
    balance_transaction: null,
    billing_details: { address: { country: p.country }, email: p.email, name: null },
    captured: true,
    created,
    currency,
    customer,
    description: offer.plan,
    metadata,
    paid: true,
    payment_intent: `pi_demo_${p.n}`,
    refunded: false,
    status: "succeeded",
  });
  summary.payments += 1;
}

/** One Stripe delivery of `type` about `object`, signed by Stripe's SDK at the server's time. */
async function deliver(
  target: DemoTarget,
  summary: DemoSummary,
  type: string,
  at: number,
  object: Record<string, unknown>,
): Promise<void> {
  target.setNow(at);
  const payload = JSON.stringify(
    {
      id: `evt_demo_${type.replaceAll(".", "_")}_${String(object.id)}`,
      object: "event",
      api_version: "2025-03-31.basil",
      created: seconds(at),
      data: { object },
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type,
    },
    null,
    2,
  );
  const signature = Stripe.webhooks.generateTestHeaderString({
    payload,
    secret: target.connector.secret,
    timestamp: seconds(at),
  });
  const r = await post(`${target.url}/api/v1/connectors/${target.connector.id}`, payload, {
    "stripe-signature": signature,
  });
  if (r.status !== 200) throw new Error(`demo data: Stripe ${type} answered ${r.status} ${r.text}`);
  summary.stripeDeliveries += 1;
}
