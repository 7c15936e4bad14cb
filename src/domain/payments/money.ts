/**
 * Exact money: amounts are integer minor units of an ISO 4217 currency.
 * A JSON number is turned into minor units through its shortest decimal
 * representation (what the sender typed for any amount of up to 15
 * significant digits), never through float arithmetic.
 */

/** ISO 4217 minor-unit exponents that are not 2. CLDR (Intl) differs for several currencies, so ISO's own table is kept here. */
// biome-ignore format: a table reads better packed
const EXPONENTS: Readonly<Record<string, number>> = {
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0,
  UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
  CLF: 4, UYW: 4,
};

/** ISO 4217 codes that Intl (ICU) does not list but ISO does. */
const EXTRA_CODES = ["CLF", "UYI", "UYW", "BOV", "CHE", "CHW", "COU", "MXV", "USN"];
/** Codes ICU lists that have no minor unit in ISO 4217 (not money for payments). */
const NOT_MONEY = new Set(["XDR", "XSU", "XUA", "XAU", "XAG", "XPT", "XPD", "XTS", "XXX"]);

const CURRENCIES: ReadonlySet<string> = new Set(
  [...Intl.supportedValuesOf("currency"), ...EXTRA_CODES].filter((c) => !NOT_MONEY.has(c)),
);

/** Whether `code` is an active ISO 4217 currency code (upper case). */
export function isCurrency(code: string): boolean {
  return CURRENCIES.has(code);
}

/** The currency's ISO 4217 exponent: digits after the decimal point. */
export function currencyExponent(code: string): number {
  return EXPONENTS[code] ?? 2;
}

/** Largest minor-unit amount kept exact (2^53 - 1). */
export const MAX_MINOR = Number.MAX_SAFE_INTEGER;

/**
 * Minor units of a major-unit amount, or why it cannot be converted exactly:
 * `"precision"` when it has more decimals than the currency, `"range"` when
 * it is too large to be exact.
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
  const minor = Number(text);
  if (!Number.isSafeInteger(minor)) return { ok: false, reason: "range" };
  return { ok: true, minor: amount < 0 ? -minor : minor };
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
export function formatMinorUnits(minor: number, currency: string): string {
  const exp = currencyExponent(currency);
  const sign = minor < 0 ? "-" : "";
  const digits = Math.abs(minor)
    .toString()
    .padStart(exp + 1, "0");
  if (exp === 0) return sign + digits;
  return `${sign}${digits.slice(0, -exp)}.${digits.slice(-exp)}`;
}
