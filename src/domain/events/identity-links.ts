import type { EventRecord, IdentityLink } from "../store/store.js";

/** The identify event: links a visitor to the caller's user id; never counted. */
export const IDENTIFY = "$identify";

/** The identity links a request's enriched events ask for: one per `$identify` with a user id. */
export function identityLinksOf(records: readonly EventRecord[], siteId: string): IdentityLink[] {
  return records
    .filter((r) => r.name === IDENTIFY && r.userId !== undefined)
    .map((r) => ({
      siteId,
      visitorId: r.visitorId,
      userId: r.userId as string,
      ts: r.ts,
    }));
}
