/**
 * One port, every protocol: a valid key passes authentication on both
 * endpoints over REST (HTTP/1.1 and h2c), Connect (JSON and binary),
 * gRPC-Web, gRPC, `buf curl` and an independent grpc-js client.
 */
import { fromJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { EventsService } from "../../gen/ingest/v1/events_pb.js";
import { PaymentsService, RecordPaymentRequestSchema } from "../../gen/ingest/v1/payments_pb.js";
import { validEvent, validPayment } from "../helpers/fixtures.js";
import { bufCurl, grpcJsClient, PROTOCOLS, rpcClient } from "../helpers/rpc-clients.js";
import { postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const auth = () => ({ authorization: `Bearer ${ctx.key}` });
/** The fixture as a message: connect-es clients take messages, not the REST JSON. */
const paymentMessage = (id: string) => fromJson(RecordPaymentRequestSchema, validPayment(id));

const ctx = useTestServer();

describe("REST", () => {
  it("records a payment over HTTP/1.1", async () => {
    const res = await postJson(`${ctx.url}/api/v1/payments`, validPayment("pay_rest"), {
      key: ctx.key,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, data: { payment_id: "pay_rest" } });
  });

  it("records an event over HTTP/1.1", async () => {
    const res = await postJson(`${ctx.url}/api/v1/events`, validEvent(ctx.siteId), {
      key: ctx.key,
    });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
  });
});

describe.each(PROTOCOLS)("connect-es client over %s", (protocol) => {
  it("records a payment", async () => {
    const client = ctx.client(PaymentsService, protocol);
    const res = await client.recordPayment(paymentMessage(`pay_${protocol}`), { headers: auth() });
    expect(res.paymentId).toBe(`pay_${protocol}`);
    expect((await ctx.store.getPayment(ctx.siteId, `pay_${protocol}`))?.amountMinor).toBe(2999);
  });

  it("records an event", async () => {
    const client = ctx.client(EventsService, protocol);
    const res = await client.recordEvents(validEvent(ctx.siteId), { headers: auth() });
    expect(res.accepted).toBe(1);
    expect(res.dropped).toBe(0);
  });
});

describe("Connect with the binary format", () => {
  it("records a payment", async () => {
    const client = rpcClient(PaymentsService, ctx.url, "connect", { useBinaryFormat: true });
    const res = await client.recordPayment(paymentMessage("pay_binary"), { headers: auth() });
    expect(res.paymentId).toBe("pay_binary");
  });
});

describe("buf curl", () => {
  it.each(PROTOCOLS)("records a payment over %s", async (protocol) => {
    const res = await bufCurl(
      `${ctx.url}/ingest.v1.PaymentsService/RecordPayment`,
      validPayment(`pay_buf_${protocol}`),
      { protocol, authorization: `Bearer ${ctx.key}` },
    );
    expect(res.stderr).toBe("");
    expect(res.output).toEqual({ paymentId: `pay_buf_${protocol}` });
  });

  it.each(PROTOCOLS)("records an event over %s", async (protocol) => {
    const res = await bufCurl(
      `${ctx.url}/ingest.v1.EventsService/RecordEvents`,
      validEvent(ctx.siteId),
      { protocol, authorization: `Bearer ${ctx.key}` },
    );
    expect(res.exitCode).toBe(0);
    expect(res.output).toMatchObject({ accepted: 1 });
  });
});

describe("grpc-js client", () => {
  it("records a payment and an event", async () => {
    const payments = grpcJsClient("payments.proto", "PaymentsService", ctx.server.port);
    const events = grpcJsClient("events.proto", "EventsService", ctx.server.port);
    try {
      const p = await payments.call<{ payment_id: string }>(
        "RecordPayment",
        validPayment("pay_grpcjs"),
        auth(),
      );
      expect(p.payment_id).toBe("pay_grpcjs");
      const e = await events.call<{ accepted: number }>(
        "RecordEvents",
        validEvent(ctx.siteId),
        auth(),
      );
      expect(e.accepted).toBe(1);
    } finally {
      payments.close();
      events.close();
    }
  });
});
