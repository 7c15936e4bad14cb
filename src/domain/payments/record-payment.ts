/**
 * The payments application: validate, build the store write, and hand it to
 * a group commit so that many concurrent payments share one durable store
 * write. Both doors (REST and Connect/gRPC) call `record`.
 */
import { createGroupCommit, QueueFullError, type QueueSettings } from "../../lib/group-commit.js";
import type { Attributor } from "../attribution/attribute.js";
import type { Clock } from "../clock.js";
import { errors, storeError } from "../errors.js";
import type {
  DeliveryOutcome,
  KeyPrincipal,
  PaymentWrite,
  ProviderDelivery,
  Store,
} from "../store/store.js";
import type { PaymentsApp, ProviderEventInput } from "./payments-app.js";
import { toProviderDelivery } from "./provider-delivery.js";
import { invalidPaymentInput, type ValidPayment, validatePayment } from "./validate-payment.js";

export interface PaymentsDeps {
  store: Store;
  clock: Clock;
  queue: QueueSettings;
  /** Credits each payment's customer to its first touch after the write. */
  attribution?: Attributor;
}

/**
 * The store write for a valid payment of `siteId` received at `now`.
 * createdAt is `now` too: the store keeps the first one on updates.
 */
export function toPaymentWrite(siteId: string, p: ValidPayment, now: number): PaymentWrite {
  const c = p.customer;
  const s = p.subscription;
  return {
    payment: {
      siteId,
      paymentId: p.paymentId,
      customerId: c.id,
      currency: p.currency,
      amountMinor: p.amountMinor,
      feeMinor: p.feeMinor,
      kind: p.kind,
      status: p.status,
      paidAt: p.paidAt,
      metadata: p.metadata,
      subscriptionId: s?.id,
      createdAt: now,
      updatedAt: now,
    },
    customer: {
      siteId,
      customerId: c.id,
      email: c.email,
      userId: c.userId,
      name: c.name,
      country: c.country,
      visitorId: c.visitorId,
      metadata: c.metadata,
      at: now,
    },
    subscription: s && {
      siteId,
      subscriptionId: s.id,
      customerId: c.id,
      currency: p.currency,
      plan: s.plan,
      interval: s.interval,
      status: s.status,
      amountMinor: s.amountMinor,
      startedAt: s.startedAt,
      currentPeriodEnd: s.currentPeriodEnd,
      canceledAt: s.canceledAt,
      endedAt: s.endedAt,
      // Only used when the subscription is first stored; later payments keep what is known.
      defaults: { status: "active", startedAt: p.paidAt },
      at: now,
    },
  };
}

/** The payments application over a store, with its own group-commit queue. */
export function createPaymentsApp(deps: PaymentsDeps): PaymentsApp {
  const { store, clock, queue } = deps;
  // One queue for both sources, so a provider's payments share the endpoint's
  // batches, durability and back pressure.
  const commit = createGroupCommit<Job, DeliveryOutcome | undefined>({
    ...queue,
    async commit(jobs) {
      // Runs of one source, in arrival order: writes of one payment_id apply in
      // arrival order, so the last one wins.
      const results: (DeliveryOutcome | undefined)[] = [];
      for (const run of runsOf(jobs)) {
        if (run[0]?.kind === "payment") {
          await store.commitPayments(run.map((j) => (j as PaymentJob).write));
          results.push(...run.map(() => undefined));
        } else {
          results.push(
            ...(await store.commitProviderDeliveries(run.map((j) => (j as DeliveryJob).delivery))),
          );
        }
      }
      // The payments are durable now; a failed attribution leaves them
      // unattributed until the customer's next payment or link.
      await deps.attribution
        ?.afterPayments(
          jobs.flatMap((j) =>
            j.kind === "payment"
              ? [{ siteId: j.write.payment.siteId, customerId: j.write.payment.customerId }]
              : j.delivery.writes.map((w) => ({
                  siteId: j.delivery.siteId,
                  customerId: w.customer.customerId,
                })),
          ),
        )
        .catch(() => {});
      return results;
    },
  });

  async function submit(job: Job): Promise<DeliveryOutcome | undefined> {
    try {
      return await commit.submit(job);
    } catch (err) {
      if (err instanceof QueueFullError) throw errors.queueFull();
      // Unavailable: the write may or may not have landed; either way a retry
      // with the same payment_id is safe. A refusal (StoreFailureError) is a 500.
      throw storeError(err);
    }
  }

  return {
    async record(principal: KeyPrincipal, input: Record<string, unknown>) {
      const v = validatePayment(input);
      if (!v.ok) throw invalidPaymentInput(v.issues);
      const write = toPaymentWrite(principal.siteId, v.payment, clock.now());
      await submit({ kind: "payment", write });
      return { paymentId: v.payment.paymentId };
    },
    async recordProviderEvent(input: ProviderEventInput) {
      const delivery = toProviderDelivery(input, clock.now());
      return (await submit({ kind: "delivery", delivery })) ?? "applied";
    },
    drain: () => commit.drain(),
  };
}

interface PaymentJob {
  kind: "payment";
  write: PaymentWrite;
}
interface DeliveryJob {
  kind: "delivery";
  delivery: ProviderDelivery;
}
type Job = PaymentJob | DeliveryJob;

/** Consecutive jobs of one kind, in order. */
function runsOf(jobs: Job[]): Job[][] {
  const runs: Job[][] = [];
  for (const job of jobs) {
    const last = runs[runs.length - 1];
    if (last && last[0]?.kind === job.kind) last.push(job);
    else runs.push([job]);
  }
  return runs;
}
