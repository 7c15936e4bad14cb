/**
 * Valid random payments round-trip exactly: whatever valid payment is
 * POSTed (any id, currency exponent, amount up to 15 digits of minor units
 * written in any JSON number form, any RFC 3339 offset and fraction,
 * metadata of any Unicode), ReportsService.GetPayment returns the same
 * minor units, decimal, fee, kind, status, instant and metadata.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { ReportsService, type StoredPayment } from "../../gen/ingest/v1/reports_pb.js";
import { validPayment } from "../helpers/fixtures.js";
import { runs, SEED, send, TEST_TIMEOUT } from "../helpers/robustness.js";
import { ADMIN_TOKEN } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();
beforeAll(async () => {
  console.info(`payments-roundtrip: fast-check seed ${SEED} (replay with FC_SEED=${SEED})`);
});

async function getPayment(paymentId: string): Promise<StoredPayment | undefined> {
  const client = ctx.client(ReportsService);
  try {
    const res = await client.getPayment(
      { siteId: ctx.siteId, paymentId },
      { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, timeoutMs: 10_000 },
    );
    return res.payment;
  } catch (err) {
    if (ConnectError.from(err).code === Code.NotFound) return undefined;
    throw err;
  }
}

// ---------------------------------------------------------------------------
// Money written as JSON number text

/** ISO 4217 exponents, written out here (not imported) so the test checks the table. */
const EXPONENTS: Record<string, number> = {
  USD: 2,
  EUR: 2,
  GBP: 2,
  BGN: 2,
  JPY: 0,
  CLP: 0,
  ISK: 0,
  VND: 0,
  KWD: 3,
  BHD: 3,
  IQD: 3,
  CLF: 4,
  UYW: 4,
};
const CURRENCIES = Object.keys(EXPONENTS);
const MAX_MINOR = 999_999_999_999_999n;

type NumberStyle = "plain" | "padded" | "exponent" | "scientific" | "trailingZeros";

/** The major-unit decimal of `minor` minor units, every fraction digit written ("29.90"). */
function decimalOf(minor: bigint, exp: number): string {
  const digits = minor.toString().padStart(exp + 1, "0");
  return exp === 0 ? digits : `${digits.slice(0, -exp)}.${digits.slice(-exp)}`;
}

/**
 * JSON number text for `minor` minor units, in one of several spellings of
 * the same decimal value (each exact: at most 15 significant digits).
 */
function numberText(minor: bigint, exp: number, style: NumberStyle): string {
  const digits = minor.toString();
  switch (style) {
    case "padded":
      return decimalOf(minor, exp);
    case "plain": {
      const d = decimalOf(minor, exp);
      return d.includes(".") ? d.replace(/\.?0+$/, "") : d;
    }
    case "trailingZeros":
      return exp === 0 ? `${digits}.000` : `${decimalOf(minor, exp)}00`;
    case "exponent":
      return exp === 0 ? `${digits}e0` : `${digits}E-${exp}`;
    case "scientific": {
      const e = digits.length - 1 - exp;
      return `${digits[0]}${digits.length > 1 ? `.${digits.slice(1)}` : ""}e${e >= 0 ? "+" : ""}${e}`;
    }
  }
}

const minorArb = (min: bigint) =>
  fc.oneof(
    fc.bigInt({ min, max: 999n }),
    fc.bigInt({ min, max: MAX_MINOR }),
    fc.bigInt({ min, max: 10_000_000n }),
    fc.constantFrom(MAX_MINOR, 10n ** 14n, 100n, 1n, ...(min === 0n ? [0n] : [])),
  );

const styleArb = fc.constantFrom<NumberStyle>(
  "plain",
  "padded",
  "exponent",
  "scientific",
  "trailingZeros",
);

// ---------------------------------------------------------------------------
// RFC 3339 times

const MIN_INSTANT = Date.parse("0000-01-02T00:00:00.000Z");
const MAX_INSTANT = Date.parse("9999-12-30T23:59:59.999Z");

interface TimeSpec {
  instant: number;
  offsetMinutes: number;
  zulu: "Z" | "z" | "+00:00" | "-00:00";
  t: "T" | "t";
  fraction: "auto" | "none" | "short" | "extra";
  extraDigits: string;
}

const timeArb: fc.Arbitrary<TimeSpec> = fc.record({
  instant: fc.oneof(
    fc.integer({ min: MIN_INSTANT, max: MAX_INSTANT }),
    fc.integer({
      min: Date.parse("1990-01-01T00:00:00Z"),
      max: Date.parse("2040-01-01T00:00:00Z"),
    }),
    fc.integer({ min: 0, max: 1_000 }).map((ms) => ms * 1_000),
  ),
  offsetMinutes: fc.oneof(
    fc.constant(0),
    fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 }),
    fc.constantFrom(330, 345, -570, 840, -720),
  ),
  zulu: fc.constantFrom("Z", "z", "+00:00", "-00:00"),
  t: fc.constantFrom("T", "t"),
  fraction: fc.constantFrom("auto", "none", "short", "extra"),
  extraDigits: fc.stringMatching(/^[0-9]{1,6}$/),
});

const two = (n: number) => String(n).padStart(2, "0");

/** The RFC 3339 text of the spec's instant, written in its offset. */
function timeText(s: TimeSpec): string {
  const local = new Date(s.instant + s.offsetMinutes * 60_000);
  const ms = local.getUTCMilliseconds();
  const msText = String(ms).padStart(3, "0");
  const fraction =
    s.fraction === "none" && ms === 0
      ? ""
      : s.fraction === "short" && ms % 10 === 0
        ? `.${msText.replace(/0+$/, "") || "0"}`
        : s.fraction === "extra"
          ? `.${msText}${s.extraDigits}`
          : `.${msText}`;
  const abs = Math.abs(s.offsetMinutes);
  const offset =
    s.offsetMinutes === 0
      ? s.zulu
      : `${s.offsetMinutes < 0 ? "-" : "+"}${two(Math.floor(abs / 60))}:${two(abs % 60)}`;
  return (
    `${String(local.getUTCFullYear()).padStart(4, "0")}-${two(local.getUTCMonth() + 1)}-${two(local.getUTCDate())}` +
    `${s.t}${two(local.getUTCHours())}:${two(local.getUTCMinutes())}:${two(local.getUTCSeconds())}` +
    `${fraction}${offset}`
  );
}

// ---------------------------------------------------------------------------
// Payments

const idArb = fc.stringMatching(/^[A-Za-z0-9_\-:.]{1,128}$/);
const textArb = fc.oneof(
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 30 }),
  fc.string({ unit: "binary", minLength: 1, maxLength: 30 }),
);
const metadataArb = fc.dictionary(
  fc.oneof(
    { weight: 4, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom("__proto__", "constructor", "toString", "", "a.b", "ключ"),
    },
  ),
  fc.oneof(fc.string({ unit: "binary", maxLength: 40 }), fc.constant("")),
  { maxKeys: 6 },
);

const paymentArb = fc.record({
  paymentId: idArb,
  currency: fc.constantFrom(...CURRENCIES),
  amount: minorArb(1n),
  amountStyle: styleArb,
  fee: fc.option(fc.record({ minor: minorArb(0n), style: styleArb }), { nil: undefined }),
  kind: fc.constantFrom("charge", "refund", "chargeback"),
  status: fc.option(fc.constantFrom("succeeded", "pending", "failed"), { nil: undefined }),
  paidAt: timeArb,
  metadata: fc.option(metadataArb, { nil: undefined }),
  customer: fc.record(
    {
      id: idArb,
      email: fc
        .tuple(
          fc.stringMatching(/^[a-zA-Z0-9._%+-]{1,20}$/),
          fc.stringMatching(/^[a-z0-9-]{1,12}\.[a-z]{2,6}$/),
        )
        .map(([l, d]) => `${l}@${d}`),
      user_id: textArb,
      name: textArb,
      country: fc.constantFrom("GB", "US", "DE", "JP", "KW", "CL", "BR"),
      visitor_id: textArb,
      metadata: metadataArb,
    },
    { requiredKeys: ["id"] },
  ),
  subscription: fc.option(
    fc.record(
      {
        id: idArb,
        plan: textArb,
        interval: fc.constantFrom("day", "week", "month", "year"),
        status: fc.constantFrom("active", "trialing", "past_due", "paused", "canceled", "ended"),
        amount: fc.record({ minor: minorArb(0n), style: styleArb }),
        started_at: timeArb,
        current_period_end: timeArb,
        canceled_at: timeArb,
        ended_at: timeArb,
      },
      { requiredKeys: ["id"] },
    ),
    { nil: undefined },
  ),
  door: fc.oneof(
    { weight: 3, arbitrary: fc.constant("rest" as const) },
    { weight: 1, arbitrary: fc.constant("connect" as const) },
  ),
});

type GeneratedPayment = typeof paymentArb extends fc.Arbitrary<infer T> ? T : never;

/**
 * The JSON text of the payment, built by hand so each number is sent
 * exactly as spelled (JSON.stringify would re-spell it).
 */
function paymentJson(p: GeneratedPayment): string {
  const exp = EXPONENTS[p.currency] as number;
  const parts: string[] = [
    `"payment_id":${JSON.stringify(p.paymentId)}`,
    `"amount":${numberText(p.amount, exp, p.amountStyle)}`,
    `"currency":${JSON.stringify(p.currency)}`,
    `"kind":${JSON.stringify(p.kind)}`,
    `"paid_at":${JSON.stringify(timeText(p.paidAt))}`,
    `"customer":${JSON.stringify(p.customer)}`,
  ];
  if (p.fee) parts.push(`"fee":${numberText(p.fee.minor, exp, p.fee.style)}`);
  if (p.status !== undefined) parts.push(`"status":${JSON.stringify(p.status)}`);
  if (p.metadata !== undefined) parts.push(`"metadata":${JSON.stringify(p.metadata)}`);
  if (p.subscription) {
    const { amount, started_at, current_period_end, canceled_at, ended_at, ...rest } =
      p.subscription;
    const sub: string[] = Object.entries(rest).map(
      ([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`,
    );
    if (amount) sub.push(`"amount":${numberText(amount.minor, exp, amount.style)}`);
    for (const [k, v] of Object.entries({
      started_at,
      current_period_end,
      canceled_at,
      ended_at,
    })) {
      if (v) sub.push(`${JSON.stringify(k)}:${JSON.stringify(timeText(v))}`);
    }
    parts.push(`"subscription":{${sub.join(",")}}`);
  }
  return `{${parts.join(",")}}`;
}

const sortedEntries = (o: Record<string, string> | undefined) =>
  Object.entries(o ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

describe("valid random payments round-trip exactly through GetPayment", () => {
  it(
    "amount, fee, kind, status, paid_at and metadata come back as sent",
    async () => {
      await fc.assert(
        fc.asyncProperty(paymentArb, async (p) => {
          const body = paymentJson(p);
          const headers = {
            authorization: `Bearer ${ctx.key}`,
            "content-type": "application/json",
          };
          const context = `${p.door} ${body}`;
          if (p.door === "rest") {
            const res = await send(`${ctx.url}/api/v1/payments`, { headers, body });
            expect([res.status, res.text], context).toEqual([
              200,
              JSON.stringify({ ok: true, data: { payment_id: p.paymentId } }),
            ]);
          } else {
            const res = await send(`${ctx.url}/ingest.v1.PaymentsService/RecordPayment`, {
              headers,
              body,
            });
            expect([res.status, res.text], context).toEqual([
              200,
              JSON.stringify({ paymentId: p.paymentId }),
            ]);
          }

          const stored = await getPayment(p.paymentId);
          expect(stored, context).toBeDefined();
          const s = stored as StoredPayment;
          const exp = EXPONENTS[p.currency] as number;
          expect(
            {
              paymentId: s.paymentId,
              customerId: s.customerId,
              amount: s.amount && {
                currency: s.amount.currency,
                minorUnits: s.amount.minorUnits,
                decimal: s.amount.decimal,
              },
              fee: s.fee && { minorUnits: s.fee.minorUnits, decimal: s.fee.decimal },
              kind: s.kind,
              status: s.status,
              paidAt: s.paidAt,
              metadata: sortedEntries(s.metadata),
              subscriptionId: s.subscriptionId,
            },
            context,
          ).toEqual({
            paymentId: p.paymentId,
            customerId: p.customer.id,
            amount: {
              currency: p.currency,
              minorUnits: p.amount,
              decimal: decimalOf(p.amount, exp),
            },
            fee: p.fee && { minorUnits: p.fee.minor, decimal: decimalOf(p.fee.minor, exp) },
            kind: p.kind,
            status: p.status ?? "succeeded",
            paidAt: new Date(p.paidAt.instant).toISOString(),
            metadata: sortedEntries(p.metadata),
            subscriptionId: p.subscription?.id,
          });
        }),
        runs(200),
      );
    },
    TEST_TIMEOUT,
  );

  it("the generators' number spellings denote the intended decimal (oracle check)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...CURRENCIES),
        minorArb(1n),
        styleArb,
        (currency, minor, style) => {
          const exp = EXPONENTS[currency] as number;
          const text = numberText(minor, exp, style);
          // Re-spelling the parsed double in the currency's exponent gives the decimal back.
          const n = JSON.parse(text) as number;
          expect(n.toFixed(exp), `${text}`).toBe(decimalOf(minor, exp));
        },
      ),
      runs(500),
    );
    expect(numberText(2990n, 2, "plain")).toBe("29.9");
    expect(numberText(2990n, 2, "scientific")).toBe("2.990e+1");
    expect(numberText(5n, 4, "padded")).toBe("0.0005");
    expect(
      timeText({
        instant: Date.parse("2024-01-15T10:30:00.120Z"),
        offsetMinutes: 540,
        zulu: "Z",
        t: "T",
        fraction: "short",
        extraDigits: "9",
      }),
    ).toBe("2024-01-15T19:30:00.12+09:00");
  });
});

describe("after the round trips", () => {
  it("the server still answers /healthz and records a valid payment", async () => {
    expect((await send(`${ctx.url}/healthz`, { method: "GET" })).status).toBe(200);
    const res = await send(`${ctx.url}/api/v1/payments`, {
      headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" },
      body: JSON.stringify(validPayment("pay_after_roundtrip")),
    });
    expect(res.status).toBe(200);
    expect((await getPayment("pay_after_roundtrip"))?.amount?.decimal).toBe("29.99");
  });
});
