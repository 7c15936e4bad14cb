/**
 * Providers' minor units to the Payment body's major units, exactly. Each
 * provider counts minor units by its own table, which is not always ISO
 * 4217's; the result goes through the payments validation, which stores it
 * in ISO minor units (and refuses what ISO cannot hold exactly).
 */
import { currencyExponent } from "../payments/money.js";

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

/** Unix seconds (providers' `created`) as RFC 3339, or undefined. */
export function fromUnixSeconds(seconds: unknown): string | undefined {
  if (typeof seconds !== "number" || !Number.isFinite(seconds)) return undefined;
  return new Date(seconds * 1000).toISOString();
}

/** An RFC 3339 provider time as Unix ms (for ordering), or undefined. */
export function msOf(time: unknown): number | undefined {
  if (typeof time !== "string") return undefined;
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? undefined : ms;
}
