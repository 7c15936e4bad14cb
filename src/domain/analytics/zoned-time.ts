/**
 * The calendar of a site's time zone, read through the runtime's ICU
 * (`Intl.DateTimeFormat`, the same IANA database as the engine's): whole
 * days to instants across daylight-saving changes, and the labels of time
 * buckets. Pure; no dependency.
 */

/** A wall-clock time in a time zone (month 1–12). */
export interface ZonedTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
      era: "short",
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/**
 * Whether `name` is an IANA time zone the runtime knows (`Europe/Paris`,
 * `UTC`, `Asia/Kolkata`, links such as `Asia/Calcutta`). Offsets (`+05:30`)
 * and abbreviations (`CET` is a zone of its own, `EST5EDT` too) follow
 * ICU; a bare offset string is refused: a site's days follow its zone's rules.
 */
export function isTimeZone(name: string): boolean {
  return canonicalTimeZone(name) !== undefined;
}

/** The zone's name as the runtime spells it (`utc` → `UTC`), or undefined when it is not one. */
export function canonicalTimeZone(name: string): string | undefined {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name) || name.length > 64) return undefined;
  try {
    return formatter(name).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** The wall-clock time of instant `ms` in `timeZone`. */
export function toZoned(ms: number, timeZone: string): ZonedTime {
  const parts: Record<string, string> = {};
  for (const p of formatter(timeZone).formatToParts(ms)) parts[p.type] = p.value;
  const y = Number(parts.year);
  return {
    year: parts.era === "BC" ? 1 - y : y,
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour),
    minute: Number(parts.minute),
    second: Number(parts.second),
    millisecond: ((ms % 1000) + 1000) % 1000,
  };
}

/** The wall-clock time read as if it were UTC (proleptic Gregorian, any year). */
function asUtc(t: ZonedTime): number {
  const d = new Date(0);
  d.setUTCFullYear(t.year, t.month - 1, t.day);
  d.setUTCHours(t.hour, t.minute, t.second, t.millisecond);
  return d.getTime();
}

/** The zone's offset from UTC at instant `ms`, in ms (east positive). */
export function offsetAt(ms: number, timeZone: string): number {
  return asUtc(toZoned(ms, timeZone)) - ms;
}

const DAY_MS = 86_400_000;

/**
 * The instant of a wall-clock time in `timeZone`, as Temporal's
 * `"compatible"` disambiguation gives it: when the time occurs twice (clocks
 * set back) the earlier instant; when it does not occur (clocks set forward
 * over it) the time read with the offset before the jump, i.e. moved later by
 * the gap. A day whose midnight is skipped thus starts at the jump, its
 * first instant.
 */
export function fromZoned(t: ZonedTime, timeZone: string): number {
  const local = asUtc(t);
  // Offsets change at most a few times a year: the ones a day either side cover every case.
  const before = offsetAt(local - DAY_MS, timeZone);
  const after = offsetAt(local + DAY_MS, timeZone);
  const candidates = [local - before, local - after].filter(
    (ms) => asUtc(toZoned(ms, timeZone)) === local,
  );
  if (candidates.length > 0) return Math.min(...candidates);
  // A gap: read with the offset before the jump, the time falls on the jump itself or after it.
  return local - before;
}

/** A day `YYYY-MM-DD` as numbers, or undefined when it is not a real calendar day. */
export function parseDay(text: string): { year: number; month: number; day: number } | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  return { year, month, day };
}

/** The number of days of a month (1–12) of a proleptic Gregorian year. */
export function daysInMonth(year: number, month: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, 0);
  return d.getUTCDate();
}

/** The first instant of a calendar day in `timeZone`. */
export function startOfDay(
  day: { year: number; month: number; day: number },
  timeZone: string,
): number {
  return fromZoned({ ...day, hour: 0, minute: 0, second: 0, millisecond: 0 }, timeZone);
}

/** The calendar day after `day`. */
export function nextDay(day: { year: number; month: number; day: number }) {
  const d = new Date(0);
  d.setUTCFullYear(day.year, day.month - 1, day.day + 1);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}

/** Whole days from `a` to `b` (calendar days, no time zone). */
export function daysBetween(
  a: { year: number; month: number; day: number },
  b: { year: number; month: number; day: number },
): number {
  const ms = (x: typeof a) => {
    const d = new Date(0);
    d.setUTCFullYear(x.year, x.month - 1, x.day);
    return d.getTime();
  };
  return Math.round((ms(b) - ms(a)) / DAY_MS);
}

/** The same calendar day a year earlier; 29 February becomes 28 February. */
export function yearEarlier<T extends { year: number; month: number; day: number }>(t: T): T {
  const year = t.year - 1;
  return { ...t, year, day: Math.min(t.day, daysInMonth(year, t.month)) };
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** `YYYY-MM-DD` of a calendar day. */
export function formatDay(d: { year: number; month: number; day: number }): string {
  return `${pad(d.year, 4)}-${pad(d.month)}-${pad(d.day)}`;
}

/**
 * The label of the time bucket instant `ms` falls in, read on the wall clock
 * of `timeZone`: `hour` `YYYY-MM-DD HH:00`, `day` `YYYY-MM-DD`, `week` the
 * Monday that starts its ISO week `YYYY-MM-DD`, `month` `YYYY-MM`. Labels
 * sort as their buckets do. On the day clocks are set back the repeated
 * hour is one bucket (both its occurrences).
 */
export function bucketOf(
  ms: number,
  grain: "hour" | "day" | "week" | "month",
  timeZone: string,
): string {
  const t = toZoned(ms, timeZone);
  switch (grain) {
    case "hour":
      return `${formatDay(t)} ${pad(t.hour)}:00`;
    case "day":
      return formatDay(t);
    case "week": {
      const d = new Date(0);
      d.setUTCFullYear(t.year, t.month - 1, t.day);
      const back = (d.getUTCDay() + 6) % 7; // days since Monday
      d.setUTCDate(d.getUTCDate() - back);
      return formatDay({
        year: d.getUTCFullYear(),
        month: d.getUTCMonth() + 1,
        day: d.getUTCDate(),
      });
    }
    case "month":
      return `${pad(t.year, 4)}-${pad(t.month)}`;
  }
}
