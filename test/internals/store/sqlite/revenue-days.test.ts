/**
 * revenue_days and revenue_dims (migration 12, kept by the payments' writers
 * since migration 13): the daily rows equal the payments summed afresh after
 * every writer's change (a group commit, a re-send of each counted field, a
 * provider delivery, re-attribution, both erasures) and after a deletion by
 * hand, which nothing in the adapter makes; migration 12 back-fills a database
 * written before it; periodParts splits a period into whole days and partial edges.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../../../src/store/sqlite/migrations.js";
import { periodParts } from "../../../../src/store/sqlite/revenue-days.js";
import { createSqliteStore } from "../../../../src/store/sqlite/sqlite-store.js";
import { payment, T0, write } from "../../../helpers/store-contract.js";

const DAY = 86_400_000;
const dir = mkdtempSync(join(tmpdir(), "revenue-days-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The daily rows as stored, and as the payments sum them afresh. */
function storedAndRecomputed(file: string) {
  const db = new Database(file, { readonly: true });
  const day = "strftime('%Y-%m-%d', paid_at / 1000, 'unixepoch')";
  const net = "CASE kind WHEN 'charge' THEN amount_minor ELSE -amount_minor END";
  const dim = (name: string, path: string) =>
    `SELECT site_id, ${day} AS day, currency, '${name}' AS dimension,
       json_extract(attribution, '$.${path}') AS value, sum(${net}) AS net, count(*) AS payments
     FROM payments WHERE status = 'succeeded' AND json_extract(attribution, '$.${path}') IS NOT NULL
     GROUP BY 1, 2, 3, 5`;
  try {
    return {
      days: db.prepare("SELECT * FROM revenue_days ORDER BY 1, 2, 3, 4").all(),
      daysAfresh: db
        .prepare(
          `SELECT site_id, ${day} AS day, currency, channel,
             sum(CASE kind WHEN 'charge' THEN amount_minor ELSE 0 END) AS gross,
             sum(CASE kind WHEN 'refund' THEN amount_minor ELSE 0 END) AS refunds,
             sum(CASE kind WHEN 'chargeback' THEN amount_minor ELSE 0 END) AS chargebacks,
             count(*) AS payments
           FROM payments WHERE status = 'succeeded' GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
        )
        .all(),
      dims: db.prepare("SELECT * FROM revenue_dims ORDER BY 1, 2, 3, 4, 5").all(),
      dimsAfresh: db
        .prepare(
          `SELECT * FROM (${dim("source", "source")} UNION ALL ${dim("campaign", "campaign")}
             UNION ALL ${dim("landing_page", "landingPage")}) ORDER BY 1, 2, 3, 4, 5`,
        )
        .all(),
    };
  } finally {
    db.close();
  }
}

/** Stored equals afresh, for both tables. */
function expectInStep(file: string) {
  const now = storedAndRecomputed(file);
  expect(now.days).toEqual(now.daysAfresh);
  expect(now.dims).toEqual(now.dimsAfresh);
  return now;
}

const attribution = {
  channel: "Paid Search",
  source: "google",
  landingPage: "https://example.com/",
  visitorId: "v1",
  via: "visitor_id" as const,
  touchedAt: T0 - 1,
};

/** A payment of site_1, customer cus_a unless told otherwise. */
const p = (id: string, over: Parameters<typeof payment>[2]) =>
  payment("site_1", id, { customerId: "cus_a", ...over });

describe("revenue_days and revenue_dims", () => {
  it("equals the payments summed afresh after writes, re-attribution and deletions; empty cells go", async () => {
    const file = join(dir, "changes.sqlite");
    const store = createSqliteStore(file);
    try {
      await store.commitPayments(
        [
          p("pay_1", { paidAt: T0 + 1 }),
          p("pay_2", { paidAt: T0 + DAY, kind: "refund", amountMinor: 5 }),
          p("pay_3", { paidAt: T0 + 2, customerId: "cus_b", currency: "EUR" }),
          p("pay_4", { paidAt: T0 + 3, status: "failed" }),
        ].map((x) => write(x)),
      );
      await store.setAttribution("site_1", "cus_a", attribution);
      await store.commitPayments([write(p("pay_1", { paidAt: T0 + 2 * DAY }))]);
    } finally {
      await store.close();
    }
    let now = expectInStep(file);
    expect(now.days).toHaveLength(3);
    // pay_1 and pay_2 (cus_a): source and landing page, no campaign.
    expect(now.dims).toHaveLength(4);

    // Deletions (a retention job, an operator's SQL) take the payment's part away.
    const db = new Database(file);
    db.prepare("DELETE FROM payments WHERE payment_id IN ('pay_2', 'pay_3', 'pay_4')").run();
    db.close();
    now = expectInStep(file);
    expect(now.days).toHaveLength(1);
    expect(now.dims).toHaveLength(2);
  });

  it("follows every writer: re-sends of each counted field, provider deliveries, both erasures", async () => {
    const file = join(dir, "writers.sqlite");
    const store = createSqliteStore(file);
    try {
      await store.commitPayments(
        [
          p("pay_1", { paidAt: T0 + 1 }),
          p("pay_2", { paidAt: T0 + 2, amountMinor: 10 }),
          p("pay_3", { paidAt: T0 + 3, customerId: "cus_b" }),
        ].map((x) => write(x)),
      );
      await store.setAttribution("site_1", "cus_a", attribution);
      await store.setAttribution("site_1", "cus_b", { ...attribution, campaign: "spring" });
      expectInStep(file);
      // A re-send changing one counted field at a time, and one changing nothing counted.
      const resends: Parameters<typeof payment>[2][] = [
        { status: "pending" },
        { status: "succeeded", kind: "refund" },
        { kind: "chargeback", amountMinor: 7 },
        { kind: "charge", currency: "EUR" },
        { paidAt: T0 + 3 * DAY },
        { metadata: { order: "B-2" }, feeMinor: 1 },
      ];
      for (const over of resends) {
        await store.commitPayments([write(p("pay_1", over))]);
        expectInStep(file);
      }
      // The same payment twice in one group commit, and a new one beside it.
      await store.commitPayments(
        [p("pay_2", { amountMinor: 20 }), p("pay_2", { amountMinor: 30 }), p("pay_4", {})].map(
          (x) => write(x),
        ),
      );
      expectInStep(file);

      // A provider delivery writes through the same writer.
      await store.createAccount({ id: "acct_1", name: "A", plan: "scale", createdAt: T0 });
      await store.createSite({ id: "site_1", accountId: "acct_1", hostnames: [], createdAt: T0 });
      await store.insertConnector({
        id: "conn_1",
        siteId: "site_1",
        provider: "stripe",
        secret: "whsec_x",
        createdBy: "user_1",
        createdAt: T0,
      });
      const delivered = (
        eventId: string,
        version: number,
        over: Parameters<typeof payment>[2],
      ) => ({
        siteId: "site_1",
        connectorId: "conn_1",
        eventId,
        receivedAt: T0,
        writes: [{ object: "payment:pay_5", version, ...write(p("pay_5", over)) }],
      });
      await store.commitProviderDeliveries([delivered("evt_1", 1, { amountMinor: 500 })]);
      expectInStep(file);
      await store.commitProviderDeliveries([delivered("evt_2", 2, { status: "failed" })]);
      expectInStep(file);

      // Erasing a customer strips the attribution (dimensions), keeps the channel.
      await store.eraseCustomer("site_1", "cus_b", "erased_1");
      let now = expectInStep(file);
      expect(now.dims.map((d) => (d as { value: string }).value)).not.toContain("spring");
      expect(now.days).toContainEqual(expect.objectContaining({ channel: "Paid Search" }));
      // Erasing the visitor of a customer's touch leaves its payments unattributed.
      await store.linkCustomerVisitors("site_1", "cus_a", [
        { visitorId: "v1", via: "visitor_id", linkedAt: T0 },
      ]);
      await store.eraseVisitors("site_1", ["v1"], []);
      now = expectInStep(file);
      expect(now.dims).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("migration 13 drops the per-row insert and update triggers and keeps the delete trigger", async () => {
    const file = join(dir, "migration-13.sqlite");
    await createSqliteStore(file).close();
    const db = new Database(file, { readonly: true });
    try {
      expect(
        db
          .prepare(
            // The analytics feed's triggers (migration 15) are not revenue triggers.
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'payments' AND name LIKE 'payments_revenue%'",
          )
          .pluck()
          .all(),
      ).toEqual(["payments_revenue_delete"]);
    } finally {
      db.close();
    }
  });

  it("migration 12 back-fills the cells of payments written before it", async () => {
    const file = join(dir, "before-12.sqlite");
    const old = new Database(file);
    for (const m of MIGRATIONS.filter((x) => x.version < 12)) {
      old.exec(m.sql);
      old.pragma(`user_version = ${m.version}`);
    }
    const insert = old.prepare(
      `INSERT INTO payments (site_id, payment_id, customer_id, currency, amount_minor, kind, status,
         paid_at, metadata, created_at, updated_at, attribution, channel)
       VALUES ('site_1', ?, 'cus_a', 'USD', ?, ?, ?, ?, '{}', 0, 0, ?, ?)`,
    );
    insert.run("pay_1", 100, "charge", "succeeded", T0, null, "unattributed");
    insert.run("pay_2", 7, "refund", "succeeded", T0 + 5, null, "unattributed");
    insert.run(
      "pay_3",
      50,
      "charge",
      "succeeded",
      T0 + DAY,
      JSON.stringify(attribution),
      "Paid Search",
    );
    insert.run("pay_4", 99, "charge", "pending", T0, null, "unattributed");
    old.close();

    await createSqliteStore(file).close();
    const now = expectInStep(file);
    expect(now.days).toEqual([
      expect.objectContaining({ day: "2025-06-01", gross: 100, refunds: 7, payments: 2 }),
      expect.objectContaining({ day: "2025-06-02", channel: "Paid Search", gross: 50 }),
    ]);
    expect(now.dims).toEqual([
      expect.objectContaining({ dimension: "landing_page", value: "https://example.com/" }),
      expect.objectContaining({ dimension: "source", value: "google", net: 50, payments: 1 }),
    ]);
  });
});

describe("periodParts", () => {
  it("reads whole UTC days from the cells and the partial days at either end from payments", () => {
    expect(periodParts(T0, T0 + 3 * DAY)).toEqual({
      firstDay: "2025-06-01",
      endDay: "2025-06-04",
      head: [T0, T0],
      tail: [T0 + 3 * DAY, T0 + 3 * DAY],
    });
    expect(periodParts(T0 + 5, T0 + 2 * DAY + 7)).toEqual({
      firstDay: "2025-06-02",
      endDay: "2025-06-03",
      head: [T0 + 5, T0 + DAY],
      tail: [T0 + 2 * DAY, T0 + 2 * DAY + 7],
    });
    // No whole day inside: the payments only.
    expect(periodParts(T0 + 5, T0 + DAY + 7)).toEqual({
      firstDay: "",
      endDay: "",
      head: [T0 + 5, T0 + DAY + 7],
      tail: [T0 + DAY + 7, T0 + DAY + 7],
    });
    // Unbounded ends: the days the cells can name, the rest from payments.
    expect(periodParts(0, Number.MAX_SAFE_INTEGER)).toEqual({
      firstDay: "1970-01-01",
      endDay: "9999-12-31",
      head: [0, 0],
      tail: [Date.UTC(9999, 11, 31), Number.MAX_SAFE_INTEGER],
    });
  });
});
