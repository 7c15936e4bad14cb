/**
 * A strict RFC 3339 (section 5.6, `date-time`) parser. `Date.parse` is not
 * used: it accepts a date alone, a time without offset (read as local time)
 * and many other forms, and silently rolls 2024-02-30 over into March.
 */

// date-fullyear "-" date-month "-" date-mday "T" time-hour ":" time-minute
// ":" time-second [time-secfrac] time-offset. ABNF literals are
// case-insensitive, so "t" and "z" are allowed as RFC 3339 says; the space
// some applications use instead of "T" is not part of the grammar.
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** Days in a month of the proleptic Gregorian calendar (month 1-12). */
function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * Unix milliseconds of an RFC 3339 date-time, or `undefined` when `text` is
 * not one. Fractions beyond milliseconds are truncated. An offset of `-00:00`
 * ("local offset unknown") is read as UTC. A leap second (`:60`) is accepted
 * only where RFC 3339 allows it, at 23:59 UTC, and is read as the last
 * millisecond of that minute (23:59:59.999), since Unix time has no leap
 * seconds: it stays in its own minute, day and year, and after every other
 * instant of that minute. The instant, in UTC, must fall within years
 * 0000-9999, so every time written back (as `toISOString`) is a valid
 * four-digit-year RFC 3339 string: an offset that would carry
 * 9999-12-31 past the year's end, or 0000-01-01 before it, is refused.
 */
export function parseRfc3339(text: string): number | undefined {
  const m = DATE_TIME.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac = "", z, sign, oh, om] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  let offsetMinutes = 0;
  if (z === undefined) {
    const offH = Number(oh);
    const offM = Number(om);
    if (offH > 23 || offM > 59) return undefined;
    offsetMinutes = (sign === "-" ? -1 : 1) * (offH * 60 + offM);
  }
  const ms = Number(frac.slice(0, 3).padEnd(3, "0"));
  // setUTCFullYear, unlike Date.UTC, does not map years 0-99 to 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute - offsetMinutes, Math.min(second, 59), ms);
  if (second === 60) {
    if (date.getUTCHours() !== 23 || date.getUTCMinutes() !== 59) return undefined;
    date.setUTCMilliseconds(999);
  }
  const t = date.getTime();
  return t >= MIN_MS && t <= MAX_MS ? t : undefined;
}

/** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the four-digit-year range of `toISOString`. */
export const MIN_MS = -62_167_219_200_000;
export const MAX_MS = 253_402_300_799_999;

/** Whether `text` is an RFC 3339 date-time. */
export function isRfc3339(text: string): boolean {
  return parseRfc3339(text) !== undefined;
}
