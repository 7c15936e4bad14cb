/**
 * Exporting a site's payments (issue 24): ReportsService.ExportPayments over
 * Connect and gRPC, and `GET /api/v1/export/payments` as NDJSON or CSV with
 * exact decimal amounts, against a listening server.
 */
import { toJsonString } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ReportsService, StoredPaymentSchema } from "../../gen/ingest/v1/reports_pb.js";
import { EXPORT_PAGE } from "../../src/domain/reports.js";
import { expectRefusals, type Refusal } from "../helpers/refusals.js";
import type { Protocol } from "../helpers/rpc-clients.js";
import { payment, write } from "../helpers/store-contract.js";
import { TEST_NOW } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const ctx = useTestServer();
const iso = (ms: number) => new Date(ms).toISOString();
const T = TEST_NOW - 86_400_000;
const auth = () => ({ authorization: ctx.adminHeaders.authorization });
const exportUrl = (query: string) => `${ctx.url}/api/v1/export/payments?${query}`;
const range = () => `site_id=${ctx.siteId}&from=${iso(T)}&to=${iso(T + 10_000)}`;

/** Three payments in the range (one in JPY, one refund without fee, an id to quote in CSV) and one after it. */
async function seed() {
  await ctx.store.commitPayments([
    write(
      payment(ctx.siteId, "pay_2", {
        customerId: 'cus,"2"',
        currency: "JPY",
        amountMinor: 1000,
        feeMinor: 36,
        paidAt: T + 2000,
        createdAt: T + 2000,
        updatedAt: T + 2000,
      }),
    ),
    write(
      payment(ctx.siteId, "pay_1", {
        amountMinor: 2999,
        feeMinor: 117,
        paidAt: T + 1000,
        subscriptionId: "sub_1",
        createdAt: T + 1000,
        updatedAt: T + 1000,
      }),
    ),
    write(
      payment(ctx.siteId, "pay_3", {
        kind: "refund",
        amountMinor: 500,
        feeMinor: undefined,
        paidAt: T + 3000,
        createdAt: T + 3000,
        updatedAt: T + 3000,
      }),
    ),
    write(payment(ctx.siteId, "pay_late", { paidAt: T + 20_000 })),
  ]);
}

describe("ExportPayments", () => {
  it("answers CSV with a header row and exact decimal amounts, oldest first", async () => {
    await seed();
    const res = await fetch(exportUrl(`${range()}&format=csv`), { headers: auth() });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8; header=present");
    expect(await res.text()).toBe(
      [
        "payment_id,customer_id,kind,status,currency,amount,fee,paid_at,subscription_id,channel,created_at,updated_at",
        `pay_1,cus_1,charge,succeeded,USD,29.99,1.17,${iso(T + 1000)},sub_1,unattributed,${iso(T + 1000)},${iso(T + 1000)}`,
        `pay_2,"cus,""2""",charge,succeeded,JPY,1000,36,${iso(T + 2000)},,unattributed,${iso(T + 2000)},${iso(T + 2000)}`,
        `pay_3,cus_1,refund,succeeded,USD,5.00,,${iso(T + 3000)},,unattributed,${iso(T + 3000)},${iso(T + 3000)}`,
        "",
      ].join("\r\n"),
    );
  });

  it("prefixes text cells a spreadsheet would run as a formula with a quote, keeps amounts numbers and RFC 4180 quoting", async () => {
    const base = T + 50_000;
    const ids = [
      '=HYPERLINK("http://x")',
      "+1",
      "@SUM(1)",
      "-2+3",
      "\tcmd",
      "\rcmd",
      'a "quoted",\nline',
      "cus_plain",
    ];
    await ctx.store.commitPayments(
      ids.map((customerId, i) =>
        write(
          payment(ctx.siteId, `pay_f${i}`, {
            customerId,
            subscriptionId: i === 0 ? "=1+2" : undefined,
            // Never negative today (amounts must be greater than 0): were one
            // ever, it stays a number, unguarded.
            amountMinor: i === 3 ? -500 : 1999,
            paidAt: base + i,
            createdAt: base,
            updatedAt: base,
          }),
        ),
      ),
    );
    const res = await fetch(
      exportUrl(`site_id=${ctx.siteId}&from=${iso(base)}&to=${iso(base + 100)}&format=csv`),
      { headers: auth() },
    );
    expect(res.status).toBe(200);
    const row = (i: number, customer: string, amount = "19.99", sub = "") =>
      `pay_f${i},${customer},charge,succeeded,USD,${amount},0.88,${iso(base + i)},${sub},unattributed,${iso(base)},${iso(base)}`;
    expect(await res.text()).toBe(
      [
        "payment_id,customer_id,kind,status,currency,amount,fee,paid_at,subscription_id,channel,created_at,updated_at",
        row(0, `"'=HYPERLINK(""http://x"")"`, "19.99", "'=1+2"),
        row(1, "'+1"),
        row(2, "'@SUM(1)"),
        row(3, "'-2+3", "-5.00"),
        row(4, "'\tcmd"),
        row(5, `"'\rcmd"`),
        row(6, `"a ""quoted"",\nline"`),
        row(7, "cus_plain"),
        "",
      ].join("\r\n"),
    );
  });

  it("answers an empty range in CSV with the header row only", async () => {
    const res = await fetch(
      exportUrl(`site_id=${ctx.siteId}&from=${iso(T - 5000)}&to=${iso(T)}&format=csv`),
      { headers: auth() },
    );
    expect(await res.text()).toBe(
      "payment_id,customer_id,kind,status,currency,amount,fee,paid_at,subscription_id,channel,created_at,updated_at\r\n",
    );
  });

  it("answers NDJSON by default, each line the payment's StoredPayment JSON as GetPayment gives it", async () => {
    const res = await fetch(exportUrl(range()), { headers: auth() });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/x-ndjson; charset=utf-8");
    const expected: string[] = [];
    for (const id of ["pay_1", "pay_2", "pay_3"]) {
      const got = await ctx
        .client(ReportsService)
        .getPayment({ siteId: ctx.siteId, paymentId: id }, { headers: ctx.adminHeaders });
      expected.push(`${toJsonString(StoredPaymentSchema, got.payment as never)}\n`);
    }
    const text = await res.text();
    expect(text).toBe(expected.join(""));
    expect(JSON.parse(text.split("\n")[1] as string).amount).toEqual({
      currency: "JPY",
      minorUnits: "1000",
      decimal: "1000",
    });
  });

  it.each(["connect", "grpc"] as Protocol[])(
    `streams every payment of a large range over %s, a message per ${EXPORT_PAGE}`,
    async (protocol) => {
      const base = T + 100_000 + (protocol === "grpc" ? 100_000 : 0);
      const writes = Array.from({ length: 1_200 }, (_, i) =>
        write(
          payment(ctx.siteId, `pay_${protocol}_${String(i).padStart(4, "0")}`, {
            paidAt: base + i,
          }),
        ),
      );
      await ctx.store.commitPayments(writes);
      const sizes: number[] = [];
      const ids: string[] = [];
      for await (const m of ctx
        .client(ReportsService, protocol)
        .exportPayments(
          { siteId: ctx.siteId, from: iso(base), to: iso(base + 1_200) },
          { headers: ctx.adminHeaders },
        )) {
        sizes.push(m.payments.length);
        ids.push(...m.payments.map((p) => p.paymentId));
        expect(m.payments[0]?.amount?.decimal).toBe("19.99");
      }
      // Full pages of EXPORT_PAGE, then the rest.
      expect(sizes).toEqual(
        Array.from({ length: Math.ceil(1_200 / EXPORT_PAGE) }, (_, i) =>
          Math.min(EXPORT_PAGE, 1_200 - i * EXPORT_PAGE),
        ),
      );
      expect(sizes.length).toBeGreaterThan(1);
      expect(ids).toEqual(writes.map((w) => w.payment.paymentId));
    },
  );

  it("refuses bad requests with exact messages in the envelope", async () => {
    const cases: Refusal[] = [
      [`site_id=${ctx.siteId}`, {}, 401, "unauthorized", "missing or invalid admin token"],
      ["format=csv", auth(), 400, "invalid_input", "site_id: required"],
      [
        `site_id=${ctx.siteId}&format=xml`,
        auth(),
        400,
        "invalid_input",
        "format: must be ndjson or csv",
      ],
      [
        `site_id=${ctx.siteId}&format=csv&format=ndjson`,
        auth(),
        400,
        "invalid_input",
        "format: must be given once",
      ],
      [
        `site_id=${ctx.siteId}&from=${iso(T)}&to=${iso(T - 1)}`,
        auth(),
        400,
        "invalid_input",
        "to: must not be before from",
      ],
      [
        `site_id=${ctx.siteId}&to=tomorrow`,
        auth(),
        400,
        "invalid_input",
        "to: must be RFC 3339, e.g. 2024-01-15T10:30:00Z",
      ],
      ["site_id=site_nope&format=csv", auth(), 404, "not_found", "site site_nope not found"],
    ];
    await expectRefusals(exportUrl, cases);
    const del = await fetch(exportUrl(`site_id=${ctx.siteId}`), {
      method: "DELETE",
      headers: auth(),
    });
    expect(del.status).toBe(405);
  });
});
