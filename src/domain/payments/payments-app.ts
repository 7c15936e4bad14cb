/**
 * The payments application: what both doors (REST and Connect/gRPC) call.
 * It validates, builds the store write, and hands it to a group commit so
 * that many concurrent payments share one durable store write.
 */
import { createGroupCommit, QueueFullError, type QueueSettings } from "../../lib/group-commit.js";
import type { Attributor } from "../attribution/attribute.js";
import type { Clock } from "../clock.js";
import { errors, storeError } from "../errors.js";
import type { KeyPrincipal, PaymentWrite, Store } from "../store/store.js";
import { toPaymentWrite } from "./to-payment-write.js";
import { invalidPaymentInput, validatePayment } from "./validate-payment.js";

export interface PaymentsApp {
  /**
   * Validates and durably records one payment for the key's site. `input` is
   * the spec's Payment body as plain JSON values (snake_case keys), already
   * checked for unknown fields and JSON types by the door.
   */
  record(principal: KeyPrincipal, input: Record<string, unknown>): Promise<{ paymentId: string }>;
  /** Writes what is queued; called on shutdown. */
  drain(): Promise<void>;
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
  const commit = createGroupCommit<PaymentWrite, void>({
    ...queue,
    async commit(writes) {
      // One upsert batch; writes of one payment_id apply in arrival order, so the last one wins.
      await store.commitPayments(writes);
      // The payments are durable now; a failed attribution leaves them
      // unattributed until the customer's next payment or link.
      await deps.attribution
        ?.afterPayments(
          writes.map((w) => ({ siteId: w.payment.siteId, customerId: w.payment.customerId })),
        )
        .catch(() => {});
      return writes.map(() => undefined);
    },
  });

  return {
    async record(principal: KeyPrincipal, input: Record<string, unknown>) {
      const v = validatePayment(input);
      if (!v.ok) throw invalidPaymentInput(v.issues);
      const write = toPaymentWrite(principal.siteId, v.payment, clock.now());
      try {
        await commit.submit(write);
      } catch (err) {
        if (err instanceof QueueFullError) throw errors.queueFull();
        // Unavailable: the write may or may not have landed; either way a retry
        // with the same payment_id is safe. A refusal (StoreFailureError) is a 500.
        throw storeError(err);
      }
      return { paymentId: v.payment.paymentId };
    },
    drain: () => commit.drain(),
  };
}
