/**
 * Persistent visitor ids (`vid`): an id the tracking script keeps in a
 * first-party cookie (`ingest_vid`) once the site has consent, sent with
 * every event, so one browser is one visitor across days.
 *
 * Stored form: `p:<vid>`. Daily ids are 32 lowercase hex characters and a
 * vid is made of `A-Z a-z 0-9 _ -`, so the `:` keeps the two kinds apart: a
 * vid can never name a daily visitor, nor a daily id a persistent one. The
 * touches, identity links and first touch of events with a vid are the
 * persistent visitor's, kept (site, visitor) like every visitor's.
 *
 * Stitching: an event with a vid also links the daily id of the same (site,
 * ip, user agent, UTC day) to the persistent id, so the landing pageview sent
 * before consent and the site server's events of that day with forwarded
 * ip/ua but no vid are credited to the persistent visitor. A daily id is
 * stitched to at most one persistent id (the first; two persistent ids are
 * never joined), and a persistent id to at most MAX_STITCHES_PER_VISITOR
 * daily ids (the store keeps the best touches, like the identity cap).
 */
import type { EventRecord, VisitorStitch } from "../store/store.js";

/** The vid rule: 16 to 64 characters of A-Z a-z 0-9 _ - (the tracker makes 22, 128 random bits). */
export const VID_PATTERN = /^[A-Za-z0-9_-]{16,64}$/;

/** The field message of a `vid` that breaks the rule. */
export const VID_MESSAGE = "must be 16 to 64 characters of A-Z, a-z, 0-9, _ or -";

/** What a stored persistent visitor id starts with. */
export const PERSISTENT_PREFIX = "p:";

/** Most daily ids stitched to one persistent id: a visit a day for the cookie's 400 days. */
export const MAX_STITCHES_PER_VISITOR = 400;

const DAILY_ID = /^[0-9a-f]{32}$/;

/** The stored visitor id of a vid. */
export function persistentVisitorId(vid: string): string {
  return PERSISTENT_PREFIX + vid;
}

/** Whether a stored visitor id is a persistent one. */
export function isPersistentVisitorId(visitorId: string): boolean {
  return visitorId.startsWith(PERSISTENT_PREFIX);
}

/** The id a site passes back as `customer.visitor_id`: the vid itself, or the daily id. */
export function publicVisitorId(visitorId: string): string {
  return isPersistentVisitorId(visitorId) ? visitorId.slice(PERSISTENT_PREFIX.length) : visitorId;
}

/**
 * The stored visitor ids a payment's `customer.visitor_id` may name: a daily
 * id (32 lowercase hex), a vid read from the `ingest_vid` cookie, or the
 * stored form `p:<vid>` the reports show. A value that fits both a daily id
 * and a vid (a vid of 32 lowercase hex characters) names both: the stored
 * forms differ, so at most one of them has touches of that visitor.
 */
export function visitorIdCandidates(customerVisitorId: string): string[] {
  if (customerVisitorId === "") return [];
  if (isPersistentVisitorId(customerVisitorId)) return [customerVisitorId];
  const out: string[] = [];
  if (DAILY_ID.test(customerVisitorId) || !VID_PATTERN.test(customerVisitorId)) {
    out.push(customerVisitorId);
  }
  if (VID_PATTERN.test(customerVisitorId)) out.push(persistentVisitorId(customerVisitorId));
  return out;
}

/** Stitches this process knows to be stored, bounded like the known first touches. */
const MAX_KNOWN = 50_000;

export interface PersistentVisitors {
  /**
   * Moves the records whose event carried a vid (`vids[i]`, in order) to
   * their persistent visitor id and returns the stitches of their daily ids
   * that this process does not know to be stored (one per daily id).
   */
  apply(records: EventRecord[], vids: readonly (string | undefined)[]): VisitorStitch[];
  /** Records stitches of a group the store has durably committed. */
  remember(stitches: readonly VisitorStitch[]): void;
}

export function createPersistentVisitors(): PersistentVisitors {
  // `site NUL daily` → persistent: a stitch known here is not sent to the store again.
  const known = new Map<string, string>();
  return {
    apply(records, vids) {
      let stitches: Map<string, VisitorStitch> | undefined;
      records.forEach((r, i) => {
        const vid = vids[i];
        if (vid === undefined) return;
        const daily = r.visitorId;
        const persistentId = persistentVisitorId(vid);
        r.visitorId = persistentId;
        const key = `${r.siteId}\u0000${daily}`;
        if (known.has(key)) return;
        stitches ??= new Map();
        const seen = stitches.get(key);
        if (seen === undefined || r.ts < seen.ts) {
          // The first vid of a request wins, as the store keeps the first stitch of a daily id.
          stitches.set(key, {
            siteId: r.siteId,
            visitorId: daily,
            persistentId: seen?.persistentId ?? persistentId,
            ts: r.ts,
          });
        }
      });
      return stitches ? [...stitches.values()] : [];
    },
    remember(stitches) {
      for (const s of stitches) {
        if (known.size >= MAX_KNOWN) known.clear();
        known.set(`${s.siteId}\u0000${s.visitorId}`, s.persistentId);
      }
    },
  };
}
