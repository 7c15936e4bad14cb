/**
 * Exact money: amounts are integer minor units of an ISO 4217 currency.
 * A JSON number is turned into minor units through its shortest decimal
 * representation (what the sender typed for any amount of up to 15
 * significant digits), never through float arithmetic.
 */

/**
 * ISO 4217 List One: every currency code with a numeric minor unit, keyed by
 * its exponent. Kept here rather than read from Intl, whose list depends on
 * the ICU build Node ships with (it lacks VED and still has HRK, for one).
 * Codes whose minor unit is "N.A." (gold, SDR, bond units, XTS, XXX) are not
 * money a payment can be made in and are left out.
 */
// biome-ignore format: a table reads better packed
const LIST_ONE: Readonly<Record<number, string>> = {
  0: "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF",
  2: "AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BMD BND BOB BOV BRL BSD BTN BWP BYN BZD " +
    "CAD CDF CHE CHF CHW CNY COP COU CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP " +
    "GEL GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK " +
    "LBP LKR LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO " +
    "NOK NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS " +
    "SRD SSP STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS VED VES WST " +
    "XCD XCG YER ZAR ZMW ZWG",
  3: "BHD IQD JOD KWD LYD OMR TND",
  4: "CLF UYW",
};

/**
 * Codes withdrawn from List One since 2022 (kuna and lev replaced by the
 * euro, redenominated leone, Zimbabwe dollar, convertible peso, Antillean
 * guilder). Still accepted, with their former exponent of 2, so payments
 * made before the change can be imported.
 */
const RECENTLY_WITHDRAWN = "ANG BGN CUC HRK SLL ZWL";

const EXPONENTS: ReadonlyMap<string, number> = new Map([
  ...Object.entries(LIST_ONE).flatMap(([exp, codes]) =>
    codes.split(" ").map((code) => [code, Number(exp)] as const),
  ),
  ...RECENTLY_WITHDRAWN.split(" ").map((code) => [code, 2] as const),
]);

/** Whether `code` is an ISO 4217 currency code (upper case) that payments may use. */
export function isCurrency(code: string): boolean {
  return EXPONENTS.has(code);
}

/** The currency's ISO 4217 exponent: digits after the decimal point (2 for an unknown code). */
export function currencyExponent(code: string): number {
  return EXPONENTS.get(code) ?? 2;
}

/**
 * Largest minor-unit amount accepted: 15 digits. Any decimal of at most 15
 * significant digits survives JSON's binary double unchanged, so every
 * accepted amount is exactly the one the sender wrote; sums of many such
 * amounts also stay far below 2^53.
 */
export const MAX_MINOR = 999_999_999_999_999;

/**
 * Minor units of a major-unit amount, or why it cannot be converted exactly:
 * `"precision"` when it has more decimals than the currency, `"range"` when
 * its minor units would exceed {@link MAX_MINOR} (or it is not finite).
 */
export function toMinorUnits(
  amount: number,
  currency: string,
): { ok: true; minor: number } | { ok: false; reason: "precision" | "range" } {
  const exp = currencyExponent(currency);
  if (!Number.isFinite(amount)) return { ok: false, reason: "range" };
  const [digits, fraction] = decimalParts(Math.abs(amount));
  if (fraction.length > exp) return { ok: false, reason: "precision" };
  const text = (digits + fraction.padEnd(exp, "0")).replace(/^0+(?=\d)/, "");
  // Compare as text: Number() of a long digit string would round first.
  if (text.length > String(MAX_MINOR).length) return { ok: false, reason: "range" };
  const minor = Number(text);
  if (minor > MAX_MINOR) return { ok: false, reason: "range" };
  return { ok: true, minor: amount < 0 && minor !== 0 ? -minor : minor };
}

/** Integer digits and fraction digits of a non-negative number's shortest decimal form. */
function decimalParts(n: number): [string, string] {
  // toString may use exponent notation (1e-7, 1.5e+21): expand it exactly.
  const [mantissa = "0", expText] = n.toString().split("e");
  const [int = "0", frac = ""] = mantissa.split(".");
  const e = expText === undefined ? 0 : Number(expText);
  const all = int + frac;
  const point = int.length + e;
  if (point <= 0) return ["0", "0".repeat(-point) + all.replace(/0+$/, "")];
  if (point >= all.length) return [all + "0".repeat(point - all.length), ""];
  return [all.slice(0, point), all.slice(point).replace(/0+$/, "")];
}

/** Minor units as a major-unit decimal string, e.g. 2999 USD → "29.99", 1000 JPY → "1000". */
export function formatMinorUnits(minor: number | bigint, currency: string): string {
  const exp = currencyExponent(currency);
  const sign = minor < 0 ? "-" : "";
  const digits = (minor < 0 ? -BigInt(minor) : BigInt(minor)).toString().padStart(exp + 1, "0");
  if (exp === 0) return sign + digits;
  return `${sign}${digits.slice(0, -exp)}.${digits.slice(-exp)}`;
}
