/** Read operations for ReportsService (inspection, tests, the dashboard). */
import type { EventRecord, PaymentRecord, Store } from "../store/port.js";
import { DomainError } from "./errors.js";

export const LIST_EVENTS_DEFAULT = 100;
export const LIST_EVENTS_MAX = 1000;

export function createReports(deps: { store: Store }) {
  const { store } = deps;
  return {
    async listEvents(input: { siteId: string; limit: number }): Promise<EventRecord[]> {
      const limit = input.limit === 0 ? LIST_EVENTS_DEFAULT : input.limit;
      if (!Number.isInteger(limit) || limit < 1 || limit > LIST_EVENTS_MAX) {
        throw new DomainError("invalid_input", `limit must be from 1 to ${LIST_EVENTS_MAX}`);
      }
      if (!(await store.getSite(input.siteId))) {
        throw new DomainError("not_found", `site ${input.siteId} not found`);
      }
      return store.listEvents(input.siteId, limit);
    },

    async getPayment(input: { siteId: string; paymentId: string }): Promise<PaymentRecord> {
      const p = await store.getPayment(input.siteId, input.paymentId);
      if (!p) throw new DomainError("not_found", `payment ${input.paymentId} not found`);
      return p;
    },
  };
}

export type Reports = ReturnType<typeof createReports>;
