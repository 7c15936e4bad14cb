/** The store contract, payment pages: a time range and a position, oldest first (issue 24's ExportPayments). */
import { beforeEach, describe, expect, it } from "vitest";
import type { PaymentPageQuery, PaymentPosition, Store } from "../../../src/store/port.js";
import { payment, type StoreContract, T0, write } from "../../helpers/store-contract.js";

export function describePaymentPagesContract(contract: StoreContract): void {
  const { newSite } = contract;
  let store: Store;
  beforeEach(() => {
    store = contract.store;
  });

  /** The payment ids of every page of `query`. */
  async function allPages(
    siteId: string,
    query: Omit<PaymentPageQuery, "after">,
  ): Promise<string[][]> {
    const pages: string[][] = [];
    let after: PaymentPosition | undefined;
    do {
      const page = await store.pagePayments(siteId, { ...query, ...(after ? { after } : {}) });
      pages.push(page.payments.map((p) => p.paymentId));
      after = page.next;
    } while (after !== undefined);
    return pages;
  }

  describe("pagePayments", () => {
    it("pages oldest first by (paidAt, paymentId) within [from, to), with no empty last page", async () => {
      const { site } = await newSite();
      const other = await newSite();
      // Ties on paidAt are ordered by id; written out of order.
      const paid: [string, number][] = [
        ["pay_e", T0 + 3],
        ["pay_a", T0 + 1],
        ["pay_c", T0 + 2],
        ["pay_b", T0 + 2],
        ["pay_d", T0 + 2],
        ["pay_z", T0 + 9],
        ["pay_0", T0],
      ];
      await store.commitPayments(
        paid.map(([id, paidAt]) => write(payment(site.id, id, { paidAt }))),
      );
      await store.commitPayments([write(payment(other.site.id, "pay_b", { paidAt: T0 + 2 }))]);
      expect(await allPages(site.id, { from: T0 + 1, to: T0 + 9, limit: 2 })).toEqual([
        ["pay_a", "pay_b"],
        ["pay_c", "pay_d"],
        ["pay_e"],
      ]);
      expect(await allPages(site.id, { from: T0 + 1, to: T0 + 4, limit: 5 })).toEqual([
        ["pay_a", "pay_b", "pay_c", "pay_d", "pay_e"],
      ]);
      expect(await allPages(site.id, { from: T0 + 4, to: T0 + 9, limit: 5 })).toEqual([[]]);
    });

    it("returns whole records, as getPayment does", async () => {
      const { site } = await newSite();
      const p = payment(site.id, "pay_whole", { paidAt: T0 + 5, metadata: { plan: "pro" } });
      await store.commitPayments([write(p)]);
      const page = await store.pagePayments(site.id, { from: T0, to: T0 + 10, limit: 10 });
      expect(page.payments).toEqual([await store.getPayment(site.id, "pay_whole")]);
      expect(page.next).toBeUndefined();
    });
  });
}
