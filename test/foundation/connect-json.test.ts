/** Connect JSON requests are decoded as strictly as REST bodies, with the same messages. */
import { describe, expect, it } from "vitest";
import { EventsService } from "../../gen/ingest/v1/events_pb.js";
import { BROWSER_UA, validPayment } from "../helpers/fixtures.js";
import { postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();

const CONNECT_PAYMENTS = "/ingest.v1.PaymentsService/RecordPayment";

async function both(body: string) {
  const rest = await postJson(`${ctx.url}/api/v1/payments`, body, { key: ctx.key });
  const connect = await postJson(`${ctx.url}${CONNECT_PAYMENTS}`, body, { key: ctx.key });
  return { rest, connect };
}

describe("Connect JSON decoding", () => {
  it.each([
    [
      "an unknown field",
      JSON.stringify({ ...validPayment(), ammount: 29 }),
      'invalid JSON: unknown field "ammount"',
    ],
    [
      "an unknown nested field",
      JSON.stringify({ ...validPayment(), customer: { id: "c", mail: "x" } }),
      'invalid JSON: unknown field "customer.mail"',
    ],
    [
      "a number sent as a string",
      JSON.stringify({ ...validPayment(), amount: "29" }),
      "invalid JSON: amount must be a number, got string",
    ],
    ["malformed JSON", '{"payment_id": ', "invalid JSON: unexpected end of input at position 15"],
  ])("refuses %s with the REST door's message", async (_name, body, message) => {
    const { rest, connect } = await both(body);
    expect(rest.status).toBe(400);
    expect(rest.body).toEqual({ ok: false, error: { code: "invalid_input", message } });
    expect(connect.status).toBe(400);
    expect(connect.body).toMatchObject({
      code: "invalid_argument",
      message,
      details: [{ type: "google.rpc.ErrorInfo", debug: { reason: "invalid_input" } }],
    });
  });

  it("accepts both proto names and lowerCamelCase JSON names", async () => {
    const snake = await postJson(`${ctx.url}${CONNECT_PAYMENTS}`, validPayment("pay_snake"), {
      key: ctx.key,
    });
    expect(snake.body).toEqual({ paymentId: "pay_snake" });
    const camel = await postJson(
      `${ctx.url}${CONNECT_PAYMENTS}`,
      {
        paymentId: "pay_camel",
        customer: { id: "c", userId: "u1" },
        amount: 5,
        currency: "EUR",
        kind: "charge",
        paidAt: "2024-01-15T10:30:00Z",
      },
      { key: ctx.key },
    );
    expect(camel.body).toEqual({ paymentId: "pay_camel" });
    expect((await ctx.store.getCustomer(ctx.siteId, "c"))?.userId).toBe("u1");
  });

  it("refuses an events body over 8 KB like the REST door", async () => {
    const body = {
      s: ctx.siteId,
      e: "pageview",
      u: "https://example.com/",
      t: "x".repeat(8200),
    };
    const res = await postJson(`${ctx.url}/ingest.v1.EventsService/RecordEvents`, body, {
      key: ctx.key,
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: "invalid_argument",
      message: "request body larger than 8 KB",
    });
  });

  it("takes 64-bit integers as strings, as protobuf JSON writes them", async () => {
    const client = ctx.client(EventsService);
    const res = await client.recordEvents(
      {
        s: ctx.siteId,
        e: "pageview",
        u: "https://example.com/",
        ua: BROWSER_UA,
        ip: "192.0.2.1",
        ts: BigInt(ctx.clock.now() - 1000),
      },
      { headers: { authorization: `Bearer ${ctx.key}` } },
    );
    expect(res.accepted).toBe(1);
  });
});
