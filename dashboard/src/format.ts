/** How numbers read on the page. Amounts come as exact decimal strings from the service. */

/** An exact amount with its currency, e.g. "29.99 EUR" (the service's decimal, never a float). */
export function money(m: { currency: string; decimal: string } | undefined): string {
  return m ? `${m.decimal} ${m.currency}` : "–";
}

/** An RFC 3339 instant as "YYYY-MM-DD HH:MM UTC". */
export function utcTime(rfc3339: string): string {
  return `${rfc3339.slice(0, 10)} ${rfc3339.slice(11, 16)} UTC`;
}
