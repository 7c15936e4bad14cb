/** The events, identities, salts and quota part of the store port. */
import type { EventGroup, EventGroupResult, EventRecord, IdentityLink } from "./records.js";

/** Which page of a site's events `pageEvents` reads. */
export interface EventPageQuery {
  /** Events with `ts` in [from, to) only. */
  from: number;
  to: number;
  /** Only events before this position (a previous page's `next`); from the newest when absent. */
  before?: number;
  /** At most this many events. */
  limit: number;
}

/** One page of events, newest first, and where the next one starts. */
export interface EventPage {
  events: EventRecord[];
  /** The position to pass as `before` for the next page; absent on the last page. */
  next?: number;
}

/** The events, identities, salts and quota part of the store port. Every method may reject when the database is unreachable. */
export interface StoreEventsPart {
  /** Counted events of an account in a month. */
  getUsage(accountId: string, month: string): Promise<number>;
  /**
   * Writes groups of events durably in one batch. For each group, in order,
   * the quota counter of (account, month) is raised by `countable` only when
   * it stays at or under `ceiling`; otherwise nothing of that group is
   * written. The counter can never pass the ceiling, whatever runs at once.
   */
  commitEvents(groups: EventGroup[]): Promise<EventGroupResult[]>;
  /** A site's most recent events, newest first. */
  listEvents(siteId: string, limit: number): Promise<EventRecord[]>;
  /**
   * A page of a site's events, newest first by the site's order of insertion
   * (a position every event gets when stored, higher for later commits): a
   * reader paging with `next` sees neither an event twice nor skips one, however
   * many events arrive meanwhile (they are all newer than any page it reads).
   */
  pageEvents(siteId: string, query: EventPageQuery): Promise<EventPage>;
  /** The visitor ids that `$identify` linked to a user id on a site. */
  findVisitorsByUser(siteId: string, userId: string): Promise<IdentityLink[]>;
  /**
   * The visitor-hash salt of a UTC day (`YYYY-MM-DD`): stores `candidate` when
   * the day has none yet and returns the salt every process will use.
   */
  ensureSalt(day: string, candidate: string): Promise<string>;
  /** Deletes the salts of days before `day`: once gone, their visitor ids cannot be recomputed. */
  pruneSalts(day: string): Promise<void>;
}
