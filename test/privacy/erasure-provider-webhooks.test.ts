/**
 * What a payment provider's later webhook does to a customer erased here
 * (issue 24, docs/privacy.md "Erasure and payment providers"): the provider
 * still holds the customer, so its next event about it (Stripe's
 * customer.updated, a new charge) stores the customer again, with its email
 * and name, and its next event about a payment erased here (charge.updated)
 * files that payment under the customer's id again. The operator
 * must erase at the provider too, or delete the connector. Shown through a
 * real Stripe connector and signed deliveries against a listening server.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { charge, customer, signStripe, stripeEvent } from "../helpers/stripe-events.js";
import { postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const SECRET = "whsec_test_stripe_signing_secret_erasure_0123";
const NOW_S = 1773230400; // TEST_NOW in Unix seconds
const CUS = "cus_ErasedAtHereOnly";

const ctx = useTestServer();
let path = "";
let connectorId = "";

/** Delivers `event` as Stripe does (raw JSON, signed now) and expects it applied. */
async function deliver(event: Record<string, unknown>) {
  const { payload, header } = signStripe(event, SECRET, NOW_S);
  const res = await postJson(`${ctx.url}${path}`, payload, {
    headers: { "stripe-signature": header },
  });
  expect([res.status, (res.body as { data?: { outcome?: string } }).data?.outcome]).toEqual([
    200,
    "applied",
  ]);
}

/** Erases the customer over AdminService (Connect), as its owner. */
const erase = () =>
  ctx
    .client(AdminService)
    .eraseCustomer(
      { siteId: ctx.siteId, customerId: CUS, actorUserId: ctx.tenant.ownerUserId },
      { headers: ctx.adminHeaders },
    );

const customerObject = (name: string) => customer({ id: CUS, name });

describe("a customer erased here whom the provider still holds", () => {
  beforeAll(async () => {
    const c = await ctx.server.admin.createConnector({
      siteId: ctx.siteId,
      provider: "stripe",
      secret: SECRET,
      actorUserId: ctx.tenant.ownerUserId,
    });
    path = c.urlPath;
    connectorId = c.connectorId;
  });

  it("is stored again by the provider's next customer.updated or charge, and an erased payment's next event names it again", async () => {
    const first = charge({ customer: CUS });
    await deliver(stripeEvent("customer.created", customerObject("Marie Curie"), NOW_S - 30));
    await deliver(stripeEvent("charge.succeeded", first, NOW_S - 20));

    const erased = await erase();
    expect([erased.customers, erased.payments]).toEqual([1, 1]);
    expect(await ctx.store.getCustomer(ctx.siteId, CUS)).toBeUndefined();

    // The provider never heard of the erasure: its next update brings the customer back.
    await deliver(stripeEvent("customer.updated", customerObject("Marie S. Curie"), NOW_S - 10));
    expect(await ctx.store.getCustomer(ctx.siteId, CUS)).toMatchObject({
      customerId: CUS,
      email: "marie@example.com",
      name: "Marie S. Curie",
      country: "FR",
    });

    // A new charge is the customer's again; the one erased before keeps its pseudonym.
    const second = charge({ customer: CUS });
    await deliver(stripeEvent("charge.succeeded", second, NOW_S));
    const reports = ctx.client(ReportsService);
    const get = async (id: string) =>
      (
        await reports.getPayment(
          { siteId: ctx.siteId, paymentId: id },
          { headers: ctx.adminHeaders },
        )
      ).payment?.customerId;
    expect(await get(second.id as string)).toBe(CUS);
    expect(await get(first.id as string)).toMatch(/^erased_[0-9a-f]{24}$/);
    // And a later event about the erased payment itself (here charge.updated) files it
    // under the provider's customer id again: the pseudonym is undone for it.
    await deliver(stripeEvent("charge.updated", { ...first, description: "x" }, NOW_S + 1));
    expect(await get(first.id as string)).toBe(CUS);

    // Erasing again (after erasing at the provider) removes what came back.
    const again = await erase();
    expect([again.customers, again.payments]).toEqual([1, 2]);
    expect(await ctx.store.getCustomer(ctx.siteId, CUS)).toBeUndefined();

    // Once the connector is deleted, the provider's deliveries are refused and store nothing.
    await ctx.server.admin.deleteConnector({ connectorId, actorUserId: ctx.tenant.ownerUserId });
    const { payload, header } = signStripe(
      stripeEvent("customer.updated", customerObject("Marie Curie"), NOW_S + 2),
      SECRET,
      NOW_S,
    );
    const refused = await postJson(`${ctx.url}${path}`, payload, {
      headers: { "stripe-signature": header },
    });
    expect([refused.status, refused.body]).toEqual([
      404,
      { ok: false, error: { code: "not_found", message: "unknown connector" } },
    ]);
    expect(await ctx.store.getCustomer(ctx.siteId, CUS)).toBeUndefined();
  });
});
