/**
 * The store contract: what every adapter of the port (src/domain/store/) must
 * do, asserted exactly, one file per part of the port. Each adapter's test
 * file calls describeStoreContract with a function that opens a fresh store.
 */
import { afterAll, beforeAll, describe } from "vitest";
import type { Store } from "../../../src/store/port.js";
import { storeContract } from "../../helpers/store-contract.js";
import { describeAccountsContract } from "./accounts.js";
import { describeAttributionContract } from "./attribution.js";
import { describeErasureContract } from "./erasure.js";
import { describeEventPagesContract } from "./event-pages.js";
import { describeEventsContract } from "./events.js";
import { describeOverviewContract } from "./overview.js";
import { describePaymentPagesContract } from "./payment-pages.js";
import { describePaymentsContract } from "./payments.js";
import { describeQuotaContract } from "./quota.js";
import { describeRetentionContract } from "./retention.js";
import { describeSetupContract } from "./setup.js";

export function describeStoreContract(name: string, open: () => Promise<Store>): void {
  describe(`store contract: ${name}`, () => {
    let store: Store;

    beforeAll(async () => {
      store = await open();
    });

    afterAll(async () => {
      await store?.close();
    });

    const contract = storeContract(name, open, () => store);
    // First: it needs a store with no account yet.
    describeSetupContract(contract);
    describeAccountsContract(contract);
    describeQuotaContract(contract);
    describeEventsContract(contract);
    describePaymentsContract(contract);
    describeAttributionContract(contract);
    describeErasureContract(contract);
    describeEventPagesContract(contract);
    describePaymentPagesContract(contract);
    describeOverviewContract(contract);
    describeRetentionContract(contract);
  });
}
