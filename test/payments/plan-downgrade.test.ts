/**
 * Payments are the Scale plan's feature: an account moved below Scale keeps
 * its keys and connectors, but every door refuses its payments with
 * plan_required until it is on Scale again (docs/api.md, Plan changes).
 * REST, Connect, gRPC (grpc-js) and a Stripe connector delivery, each
 * checked against the store: nothing refused is written.
 */
import { Code } from "@connectrpc/connect";
import type { ServiceError } from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import { pageview, sendEvents } from "../helpers/events.js";
import {
  connectTransport,
  getPayment,
  postPayment,
  rpcRecordPayment,
} from "../helpers/payment-clients.js";
import { minimalPayment } from "../helpers/payment-fixtures.js";
import { grpcJsClient } from "../helpers/rpc-clients.js";
import { charge, signStripe, stripeEvent } from "../helpers/stripe-events.js";
import { postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const SECRET = "whsec_test_stripe_signing_secret_0123456789";
const NOW_S = 1773230400; // TEST_NOW in Unix seconds

const ctx = useTestServer();
let path: string;

beforeAll(async () => {
  path = (
    await ctx.server.admin.createConnector({
      siteId: ctx.tenant.siteId,
      provider: "stripe",
      secret: SECRET,
      actorUserId: ctx.tenant.ownerUserId,
    })
  ).urlPath;
});

const refusal = (plan: string) =>
  `recording payments requires the scale plan; account ${ctx.tenant.accountId} is on the ${plan} plan`;

function deliver(event: Record<string, unknown>) {
  const { payload, header } = signStripe(event, SECRET, NOW_S);
  return postJson(`${ctx.server.url}${path}`, payload, { headers: { "stripe-signature": header } });
}

async function grpcJsRecord(paymentId: string) {
  const c = grpcJsClient("payments.proto", "PaymentsService", ctx.server.port);
  try {
    return await c
      .call<{ payment_id: string }>("RecordPayment", minimalPayment({ payment_id: paymentId }), {
        authorization: `Bearer ${ctx.key}`,
      })
      .catch((e: ServiceError) => e);
  } finally {
    c.close();
  }
}

describe("payments after a downgrade below Scale", () => {
  it("every door refuses with plan_required and stores nothing; back on Scale they record again", async () => {
    await ctx.server.admin.setPlan({ accountId: ctx.tenant.accountId, plan: "free" });

    const rest = await postPayment(
      ctx.server,
      minimalPayment({ payment_id: "pay_dg_rest" }),
      ctx.key,
    );
    expect(rest.status).toBe(403);
    expect(rest.body).toEqual({
      ok: false,
      error: { code: "forbidden", message: refusal("free") },
    });

    const connect = await rpcRecordPayment(
      connectTransport(ctx.server),
      minimalPayment({ payment_id: "pay_dg_connect" }),
      ctx.key,
    );
    expect(connect).toEqual({
      ok: false,
      code: Code.FailedPrecondition,
      message: refusal("free"),
      reason: "forbidden",
      httpStatus: "403",
    });

    const grpc = (await grpcJsRecord("pay_dg_grpc")) as ServiceError;
    expect(grpc.code).toBe(9); // FAILED_PRECONDITION
    // Connect percent-encodes grpc-message beyond what the gRPC spec asks (`;` as %3B) and
    // grpc-js decodes it with decodeURI, which leaves reserved characters encoded.
    expect(decodeURIComponent(grpc.details)).toBe(refusal("free"));

    // A webhook delivery gets a non-2xx, so the provider keeps retrying it (Stripe: up to 3 days).
    const ch = charge({ id: "ch_dg_1" });
    const event = stripeEvent("charge.succeeded", ch, NOW_S - 5);
    const hook = await deliver(event);
    expect(hook.status).toBe(403);
    expect(hook.body).toEqual({
      ok: false,
      error: { code: "forbidden", message: refusal("free") },
    });

    for (const id of ["pay_dg_rest", "pay_dg_connect", "pay_dg_grpc", "ch_dg_1"]) {
      expect(await getPayment(ctx.server, ctx.siteId, id)).toBeUndefined();
    }

    // The same plan rule on Growth, the highest plan below Scale.
    await ctx.server.admin.setPlan({ accountId: ctx.tenant.accountId, plan: "growth" });
    const growth = await postPayment(
      ctx.server,
      minimalPayment({ payment_id: "pay_dg_rest" }),
      ctx.key,
    );
    expect(growth.status).toBe(403);
    expect(growth.body).toEqual({
      ok: false,
      error: { code: "forbidden", message: refusal("growth") },
    });

    // Back on Scale: the same keys and connector work, and the provider's retry is applied.
    await ctx.server.admin.setPlan({ accountId: ctx.tenant.accountId, plan: "scale" });
    const again = await postPayment(
      ctx.server,
      minimalPayment({ payment_id: "pay_dg_rest" }),
      ctx.key,
    );
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ ok: true, data: { payment_id: "pay_dg_rest" } });
    const retried = await deliver(event);
    expect(retried.status).toBe(200);
    expect(retried.body).toEqual({
      ok: true,
      data: { event_id: event.id, type: "charge.succeeded", outcome: "applied" },
    });
    expect((await getPayment(ctx.server, ctx.siteId, "ch_dg_1"))?.paymentId).toBe("ch_dg_1");
    const grpcAgain = (await grpcJsRecord("pay_dg_grpc")) as { payment_id: string };
    expect(grpcAgain.payment_id).toBe("pay_dg_grpc");
  });

  it("keeps accepting the keys' events within the lower plan's quota", async () => {
    await ctx.server.admin.setPlan({ accountId: ctx.tenant.accountId, plan: "free" });
    try {
      const res = await sendEvents(ctx.url, { key: ctx.key }, pageview(ctx.siteId));
      expect(res.status).toBe(204);
    } finally {
      await ctx.server.admin.setPlan({ accountId: ctx.tenant.accountId, plan: "scale" });
    }
  });
});
