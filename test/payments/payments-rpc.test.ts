/**
 * PaymentsService.RecordPayment over Connect (HTTP/1.1) and gRPC (h2c) on
 * the same port as REST: the same application function, so the same bad
 * body gets the same code and message through every door.
 */
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  connectTransport,
  getPayment,
  grpcTransport,
  postPayment,
  rpcRecordPayment,
} from "../helpers/payment-clients.js";
import {
  fullPayment,
  MESSAGE_TABLE,
  minimalPayment,
  withField,
} from "../helpers/payment-fixtures.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();

const doors = [
  { name: "Connect", transport: () => connectTransport(ctx.server) },
  { name: "gRPC", transport: () => grpcTransport(ctx.server) },
];

describe.each(doors)("RecordPayment over $name", ({ name, transport }) => {
  it("records a payment and answers its payment_id", async () => {
    const id = `pay_rpc_${name}`;
    const res = await rpcRecordPayment(transport(), fullPayment({ payment_id: id }), ctx.key);
    expect(res).toEqual({ ok: true, paymentId: id });
    expect(await getPayment(ctx.server, ctx.siteId, id)).toMatchObject({
      paymentId: id,
      customerId: "cus_001",
      amount: { currency: "USD", minorUnits: 2999n, decimal: "29.99" },
      fee: { minorUnits: 117n },
      kind: "charge",
      status: "succeeded",
      paidAt: "2024-01-15T10:30:00.000Z",
      metadata: { order: "A-1", source: "stripe" },
      subscriptionId: "sub_001",
    });
  });

  it("re-sending updates the stored payment", async () => {
    const id = `pay_rpc_resend_${name}`;
    await rpcRecordPayment(transport(), minimalPayment({ payment_id: id, amount: 5 }), ctx.key);
    await rpcRecordPayment(transport(), minimalPayment({ payment_id: id, amount: 7.25 }), ctx.key);
    expect((await getPayment(ctx.server, ctx.siteId, id))?.amount?.decimal).toBe("7.25");
  });

  it("JPY and KWD round-trip exactly", async () => {
    await rpcRecordPayment(
      transport(),
      minimalPayment({ payment_id: `pay_jpy_${name}`, currency: "JPY", amount: 123456 }),
      ctx.key,
    );
    await rpcRecordPayment(
      transport(),
      minimalPayment({ payment_id: `pay_kwd_${name}`, currency: "KWD", amount: 7.125 }),
      ctx.key,
    );
    expect((await getPayment(ctx.server, ctx.siteId, `pay_jpy_${name}`))?.amount).toMatchObject({
      minorUnits: 123456n,
      decimal: "123456",
    });
    expect((await getPayment(ctx.server, ctx.siteId, `pay_kwd_${name}`))?.amount).toMatchObject({
      minorUnits: 7125n,
      decimal: "7.125",
    });
  });

  it("a customer-only payment keeps the customer's known fields", async () => {
    const customer = { id: `cus_rpc_${name}`, email: "Grace@Navy.MIL", name: "Grace" };
    await rpcRecordPayment(
      transport(),
      minimalPayment({ payment_id: `pay_rc1_${name}`, customer }),
      ctx.key,
    );
    await rpcRecordPayment(
      transport(),
      minimalPayment({ payment_id: `pay_rc2_${name}`, customer: { id: customer.id } }),
      ctx.key,
    );
    expect(await ctx.store.getCustomer(ctx.siteId, customer.id)).toMatchObject({
      email: "grace@navy.mil",
      name: "Grace",
    });
  });

  it("NaN and Infinity are reported under the field's rule", async () => {
    const nan = await rpcRecordPayment(
      transport(),
      minimalPayment({ amount: "NaN", fee: "-Infinity" }),
      ctx.key,
    );
    expect(nan).toMatchObject({
      ok: false,
      code: Code.InvalidArgument,
      message: "invalid payment input: amount: must be greater than 0; fee: must not be negative",
    });
  });

  it("an unauthenticated call is refused", async () => {
    const res = await rpcRecordPayment(transport(), minimalPayment(), "sk_test_123");
    expect(res).toMatchObject({
      ok: false,
      code: Code.Unauthenticated,
      message: "missing or malformed API key",
      reason: "unauthorized",
    });
  });
});

/** Bodies every door can carry (valid JSON types), each invalid by the rules. */
const BAD_BODIES: [string, Record<string, unknown>][] = [
  ...MESSAGE_TABLE.map(
    ({ field, value, note }) =>
      [`${field} (${note})`, withField(fullPayment(), field, value)] as [
        string,
        Record<string, unknown>,
      ],
  ),
  ["three mistakes", minimalPayment({ kind: "sale", currency: "usd", paid_at: "2024-01-15" })],
  ["an empty body", {}],
  ["too many decimals", minimalPayment({ amount: 1.5, currency: "JPY" })],
];

describe("the same bad body gets the same code and message over REST, Connect and gRPC", () => {
  it.each(BAD_BODIES)("%s", async (_name, body) => {
    const rest = await postPayment(ctx.server, body, ctx.key);
    expect(rest.status).toBe(400);
    const { error } = rest.body as { error: { code: string; message: string } };
    expect(error.code).toBe("invalid_input");
    expect(error.message).toMatch(/^invalid payment input: /);

    for (const door of doors) {
      const rpc = await rpcRecordPayment(door.transport(), body, ctx.key);
      expect(rpc, door.name).toEqual({
        ok: false,
        code: Code.InvalidArgument,
        message: error.message,
        reason: "invalid_input",
        httpStatus: "400",
      });
    }
  });
});
