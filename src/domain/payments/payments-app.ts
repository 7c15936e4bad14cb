/**
 * The payments application: what both doors (REST and Connect/gRPC) call,
 * and the connectors' webhooks. It validates, builds the store write, and
 * hands it to a group commit so that many concurrent payments (and provider
 * events) share one durable store write.
 */
import { createGroupCommit, QueueFullError, type QueueSettings } from "../../lib/group-commit.js";
import type { Attributor } from "../attribution/attribute.js";
import type { Clock } from "../clock.js";
import { errors, storeError } from "../errors.js";
import { KEY_PLAN } from "../plans.js";
import type {
  DeliveryOutcome,
  KeyPrincipal,
  PaymentWrite,
  ProviderDelivery,
  Store,
} from "../store/store.js";
import { toProviderDelivery } from "./provider-delivery.js";
import { toPaymentWrite } from "./to-payment-write.js";
import { invalidPaymentInput, validatePayment } from "./validate-payment.js";

export interface PaymentsApp {
  /**
   * Validates and durably records one payment for the key's site. `input` is
   * the spec's Payment body as plain JSON values (snake_case keys), already
   * checked for unknown fields and JSON types by the door.
   */
  record(principal: KeyPrincipal, input: Record<string, unknown>): Promise<{ paymentId: string }>;
  /**
   * Validates and durably records what one payment-provider event says (the
   * connectors' webhooks), through the same rules and queue as `record`:
   * `duplicate` when the event was applied before.
   */
  recordProviderEvent(input: ProviderEventInput): Promise<DeliveryOutcome>;
  /** Writes what is queued; called on shutdown. */
  drain(): Promise<void>;
}

/**
 * One change a provider event makes, in the spec's Payment body words
 * (snake_case plain JSON, major units): a payment, or a customer alone with
 * an optional subscription. `object` and `version` order the changes of one
 * provider object (an older one never overwrites a newer one).
 */
export type ProviderChange =
  | { object: string; version: number; payment: Record<string, unknown> }
  | {
      object: string;
      version: number;
      /** The Payment body's `customer`. */
      customer: Record<string, unknown>;
      /** The Payment body's `subscription`, its amount in `currency`. */
      subscription?: Record<string, unknown>;
      currency?: string;
      /** RFC 3339; the subscription's start when it is first stored without one. */
      at: string;
    };

/** What one provider event says, for one site, through one connector. */
export interface ProviderEventInput {
  siteId: string;
  connectorId: string;
  eventId: string;
  changes: ProviderChange[];
}

/** What the payments application is built from. */
export interface PaymentsDeps {
  store: Store;
  clock: Clock;
  queue: QueueSettings;
  /** Credits each payment's customer to its first touch after the write. */
  attribution?: Attributor;
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

  /**
   * Payments are the Scale plan's feature (keys and connectors are created on
   * it only). An account moved to a lower plan keeps its keys and connectors,
   * but every door refuses its payments until it is on Scale again
   * (docs/api.md, Plan changes). The account comes from the directory cache,
   * so this costs no store read per payment.
   */
  async function requirePaymentsPlan(accountId: string): Promise<void> {
    const account = await store.getAccount(accountId).catch((err) => {
      throw storeError(err);
    });
    if (!account) throw errors.internal("the site's account does not exist");
    if (account.plan !== KEY_PLAN) {
      throw errors.paymentsPlanRequired(KEY_PLAN, account.id, account.plan);
    }
  }

  return {
    async record(principal: KeyPrincipal, input: Record<string, unknown>) {
      await requirePaymentsPlan(principal.accountId);
      const v = validatePayment(input);
      if (!v.ok) throw invalidPaymentInput(v.issues);
      const write = toPaymentWrite(principal.siteId, v.payment, clock.now());
      await submit({ kind: "payment", write });
      return { paymentId: v.payment.paymentId };
    },
    async recordProviderEvent(input: ProviderEventInput) {
      const site = await store.getSite(input.siteId).catch((err) => {
        throw storeError(err);
      });
      if (!site) throw errors.internal("the connector's site does not exist");
      await requirePaymentsPlan(site.accountId);
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
