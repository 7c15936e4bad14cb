/** The persistent visitors part of the store port: stitches of daily ids to persistent ids. */

/**
 * A daily visitor id joined to a persistent one (`p:<vid>`): an event with a
 * vid came from the same (site, ip, user agent) on the daily id's day.
 */
export interface VisitorStitch {
  siteId: string;
  /** The daily (hashed) visitor id. */
  visitorId: string;
  /** The persistent visitor id it belongs to. */
  persistentId: string;
  /** The time of the event that stitched them. */
  ts: number;
}

/** The persistent visitors part of the store port. Every method may reject when the database is unreachable. */
export interface StorePersistentVisitorsPart {
  /**
   * The stored stitches of these visitors: for a daily id, its persistent id;
   * for a persistent id, its daily ids (at most MAX_STITCHES_PER_VISITOR).
   * Stitches are written by commitEvents (EventGroup.stitches): a daily id
   * keeps the first persistent id it was stitched to, and a persistent id
   * past the cap takes a new daily id only when that one's first touch beats
   * the weakest stitched one's, which it replaces.
   */
  findStitches(siteId: string, visitorIds: string[]): Promise<VisitorStitch[]>;
}
