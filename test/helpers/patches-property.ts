/**
 * The property that a store applies customer and subscription patches as
 * the domain's patch functions say (src/domain/store/patches.ts): random
 * calls of commitPayments, each a batch of writes of one customer and maybe
 * its subscription, and after each call the stored records equal the
 * previous ones with the batch's change applied. Run by the store contract
 * (every store) and, without a server, against the MongoDB adapter's
 * upserts on a model of the server (test/internals/store/mongo/payments.test.ts).
 */
import fc from "fast-check";
import { expect } from "vitest";
import {
  applyChange,
  type CustomerFields,
  customerChange,
  type SubscriptionFields,
  subscriptionChange,
} from "../../src/domain/store/patches.js";
import { SUBSCRIPTION_INTERVALS, SUBSCRIPTION_STATUSES } from "../../src/domain/vocabulary.js";
import type { PaymentWrite, Store, SubscriptionPatch } from "../../src/store/port.js";
import { payment, T0, uid } from "./store-contract.js";

const opt = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const time = fc.integer({ min: T0, max: T0 + 1_000_000_000 });
const customerArb = fc.record({
  email: opt(fc.constantFrom("a@example.com", "b@example.com")),
  userId: opt(fc.constantFrom("user_a", "user_b")),
  name: opt(fc.constantFrom("Ada", "Grace")),
  country: opt(fc.constantFrom("US", "FR")),
  visitorId: opt(fc.constantFrom("vis_a", "vis_b")),
  metadata: opt(fc.dictionary(fc.constantFrom("k", "l"), fc.constantFrom("1", "2"))),
  at: time,
});
const subscriptionArb = fc.record({
  otherCustomer: fc.boolean(),
  currency: fc.constantFrom("USD", "EUR", "JPY"),
  plan: opt(fc.constantFrom("pro", "team")),
  interval: opt(fc.constantFrom(...SUBSCRIPTION_INTERVALS)),
  status: opt(fc.constantFrom(...SUBSCRIPTION_STATUSES)),
  amountMinor: opt(fc.integer({ min: 0, max: 1_000_000 })),
  startedAt: opt(time),
  currentPeriodEnd: opt(time),
  canceledAt: opt(time),
  endedAt: opt(time),
  defaults: fc.record({ status: fc.constantFrom(...SUBSCRIPTION_STATUSES), startedAt: time }),
  at: time,
});
/** Calls of commitPayments, each a batch of writes naming one customer and maybe its subscription. */
const callsArb = fc.array(
  fc.array(fc.record({ customer: customerArb, subscription: opt(subscriptionArb) }), {
    minLength: 1,
    maxLength: 3,
  }),
  { minLength: 1, maxLength: 3 },
);

/** Asserts the property on `store` (writing to site `siteId`); fast-check reports a failing case with its seed. */
export async function checkPatchesProperty(
  store: Pick<Store, "commitPayments" | "getCustomer" | "getSubscription">,
  siteId: string,
  numRuns = 30,
): Promise<void> {
  await fc.assert(
    fc.asyncProperty(callsArb, async (calls) => {
      const customerId = uid("cus");
      const subscriptionId = uid("sub");
      let customer: CustomerFields | undefined;
      let subscription: SubscriptionFields | undefined;
      for (const call of calls) {
        const writes: PaymentWrite[] = call.map((w) => {
          const { otherCustomer, ...sub } = w.subscription ?? { otherCustomer: false };
          return {
            payment: payment(siteId, uid("pay"), { customerId }),
            customer: { ...w.customer, siteId, customerId },
            ...(w.subscription && {
              subscription: {
                ...(sub as Omit<SubscriptionPatch, "siteId" | "subscriptionId" | "customerId">),
                siteId,
                subscriptionId,
                customerId: otherCustomer ? "cus_other" : customerId,
              },
            }),
          };
        });
        await store.commitPayments(writes);
        customer = applyChange(customer, customerChange(writes.map((w) => w.customer)));
        const subs = writes.flatMap((w) => (w.subscription ? [w.subscription] : []));
        if (subs.length > 0) subscription = applyChange(subscription, subscriptionChange(subs));
        expect(await store.getCustomer(siteId, customerId)).toEqual({
          siteId,
          customerId,
          ...customer,
        });
        expect(await store.getSubscription(siteId, subscriptionId)).toEqual(
          subscription && { siteId, subscriptionId, ...subscription },
        );
      }
    }),
    { numRuns },
  );
}
