/**
 * Providers' minor units to the Payment body's major units, exactly. Each
 * provider counts minor units by its own table, which is not always ISO
 * 4217's; the result goes through the payments validation, which stores it
 * in ISO minor units (and refuses what ISO cannot hold exactly).
 */
import { errors } from "../errors.js";
import { currencyExponent } from "../payments/money.js";
import { MAX_MS, MIN_MS, parseRfc3339 } from "../payments/rfc3339.js";

/**
 * Stripe's exponents where they differ from 2 (Stripe's currency documentation):
 * zero-decimal currencies, MGA among them though ISO gives it 2, and the
 * three-decimal ones. ISK keeps two decimals in Stripe's API (ISO: 0), as
 * do HUF and TWD; every other currency has 2.
 */
const STRIPE_ZERO_DECIMAL = new Set(
  "BIF CLP DJF GNF JPY KMF KRW MGA PYG RWF UGX VND VUV XAF XOF XPF".split(" "),
);
const STRIPE_THREE_DECIMAL = new Set("BHD JOD KWD OMR TND".split(" "));

/** How many of Stripe's minor units make one major unit's decimal places, for an upper-case code. */
export function stripeExponent(currency: string): number {
  if (STRIPE_ZERO_DECIMAL.has(currency)) return 0;
  if (STRIPE_THREE_DECIMAL.has(currency)) return 3;
  return 2;
}

/** ISO 4217's exponent: Paddle, Lemon Squeezy and Polar count in the currency's ISO minor unit. */
export function isoExponent(currency: string): number {
  return currencyExponent(currency);
}

/**
 * `minor` units with `exponent` decimals as a major-unit number, through its
 * decimal text (never a float division): 1050 with 2 → 10.5. Exact for up to
 * 15 significant digits, the payments endpoint's own bound. Undefined for
 * what is not a safe integer (a provider sending something unexpected).
 */
export function toMajor(minor: unknown, exponent: number): number | undefined {
  const n = typeof minor === "string" && /^-?\d{1,16}$/.test(minor) ? Number(minor) : minor;
  if (typeof n !== "number" || !Number.isSafeInteger(n)) return undefined;
  const digits = Math.abs(n)
    .toString()
    .padStart(exponent + 1, "0");
  const text = exponent === 0 ? digits : `${digits.slice(0, -exponent)}.${digits.slice(-exponent)}`;
  return (n < 0 ? -1 : 1) * Number(text);
}

/** The instants a stored time may be: RFC 3339's four-digit years, as the payments endpoint bounds them. */
const TIME_RANGE = "within years 0000-9999";

/** The 400 for a provider's time field that is unreadable or out of range, naming the field. */
function badTime(field: string, form: string) {
  return errors.invalid(`invalid provider event: ${field}: must be ${form} ${TIME_RANGE}`);
}

/**
 * Unix seconds (Stripe's `created` and the like) as Unix ms; undefined when
 * absent (null or missing). Anything else that is not a time within years
 * 0000-9999 is refused with a 400 naming `field` (a path in the provider's
 * payload, e.g. `data.object.created`): `new Date(1e20)` would throw a
 * RangeError, a 500 the provider retries for days.
 */
export function unixMs(seconds: unknown, field: string): number | undefined {
  if (seconds === undefined || seconds === null) return undefined;
  const ms = typeof seconds === "number" ? Math.trunc(seconds * 1000) : Number.NaN;
  if (!(ms >= MIN_MS && ms <= MAX_MS)) throw badTime(field, "Unix seconds");
  return ms;
}

/** Unix seconds as RFC 3339 (the Payment body's times), bounded as {@link unixMs} bounds them. */
export function fromUnixSeconds(seconds: unknown, field: string): string | undefined {
  const ms = unixMs(seconds, field);
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

/**
 * A provider's RFC 3339 time as it is, undefined when absent (null, missing
 * or ""); anything else that is not RFC 3339 within years 0000-9999 is
 * refused with a 400 naming `field`.
 */
export function rfc3339Of(time: unknown, field: string): string | undefined {
  if (time === undefined || time === null || time === "") return undefined;
  if (typeof time !== "string" || parseRfc3339(time) === undefined) {
    throw badTime(field, "RFC 3339");
  }
  return time;
}

/** A provider's RFC 3339 time as Unix ms (for ordering), bounded as {@link rfc3339Of} bounds it. */
export function msOf(time: unknown, field: string): number | undefined {
  const text = rfc3339Of(time, field);
  return text === undefined ? undefined : parseRfc3339(text);
}
