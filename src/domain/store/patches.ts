/**
 * What customer and subscription patches do to the stored records, once for
 * every store. A batch of patches of one record folds into a `Change` in the
 * terms of an upsert, which both stores can apply atomically without reading
 * first: `set` is written whether the record exists or not, `setOnInsert`
 * only when it is new (MongoDB's `$set` / `$setOnInsert`; SQLite's INSERT …
 * ON CONFLICT DO UPDATE). `applyChange` says what the result is, and the
 * contract suite checks both stores against it.
 */
import type {
  CustomerPatch,
  CustomerRecord,
  SubscriptionPatch,
  SubscriptionRecord,
} from "./records.js";

/** A stored customer's fields a patch may write (not its key, not its attribution). */
export type CustomerFields = Omit<CustomerRecord, "siteId" | "customerId" | "attribution">;

/** A stored subscription's fields a patch may write (not its key). */
export type SubscriptionFields = Omit<SubscriptionRecord, "siteId" | "subscriptionId">;

/** A change of one record: fields written always, and fields written only when it is new. */
export interface Change<F> {
  set: Partial<F>;
  setOnInsert: Partial<F>;
}

/**
 * Customer patches applied in order: present fields are set (later patches
 * win, metadata replaced as a whole), absent ones leave the stored values
 * alone; `updatedAt` is the last patch's time, `createdAt` the first's, and
 * a new customer without metadata gets an empty map. A path is never both in
 * `set` and `setOnInsert` (MongoDB refuses that).
 */
export function customerChange(patches: readonly CustomerPatch[]): Change<CustomerFields> {
  const first = patches[0] as CustomerPatch;
  const set: Partial<CustomerFields> = {};
  for (const c of patches) {
    if (c.email !== undefined) set.email = c.email;
    if (c.userId !== undefined) set.userId = c.userId;
    if (c.name !== undefined) set.name = c.name;
    if (c.country !== undefined) set.country = c.country;
    if (c.visitorId !== undefined) set.visitorId = c.visitorId;
    if (c.metadata !== undefined) set.metadata = c.metadata;
    set.updatedAt = c.at;
  }
  const setOnInsert: Partial<CustomerFields> = { createdAt: first.at };
  if (set.metadata === undefined) setOnInsert.metadata = {};
  return { set, setOnInsert };
}

/**
 * Subscription patches applied in order: the customer always replaced, the
 * currency only together with an amount (it is the amount's unit), other
 * present fields set, absent ones kept; on insert only, the first patch's
 * currency, and its defaults for status and startedAt when no patch gave them.
 */
export function subscriptionChange(
  patches: readonly SubscriptionPatch[],
): Change<SubscriptionFields> {
  const first = patches[0] as SubscriptionPatch;
  const set: Partial<SubscriptionFields> = {};
  for (const s of patches) {
    set.customerId = s.customerId;
    if (s.plan !== undefined) set.plan = s.plan;
    if (s.interval !== undefined) set.interval = s.interval;
    if (s.status !== undefined) set.status = s.status;
    if (s.amountMinor !== undefined) {
      set.amountMinor = s.amountMinor;
      set.currency = s.currency;
    }
    if (s.startedAt !== undefined) set.startedAt = s.startedAt;
    if (s.currentPeriodEnd !== undefined) set.currentPeriodEnd = s.currentPeriodEnd;
    if (s.canceledAt !== undefined) set.canceledAt = s.canceledAt;
    if (s.endedAt !== undefined) set.endedAt = s.endedAt;
    set.updatedAt = s.at;
  }
  const setOnInsert: Partial<SubscriptionFields> = { createdAt: first.at };
  if (set.currency === undefined) setOnInsert.currency = first.currency;
  if (set.status === undefined) setOnInsert.status = first.defaults.status;
  if (set.startedAt === undefined) setOnInsert.startedAt = first.defaults.startedAt;
  return { set, setOnInsert };
}

/** The fields a change leaves stored: `stored` with `set` over it, or, when new, `setOnInsert` and `set`. */
export function applyChange<F extends object>(stored: F | undefined, change: Change<F>): F {
  return { ...(stored ?? change.setOnInsert), ...change.set } as F;
}
