/** Placeholder: replaced by the payments implementation. */
import type { Store } from "../../store/port.js";
import type { Clock } from "../clock.js";
import { DomainError } from "../errors.js";
import type { PaymentsApp } from "./payments-app.js";

export interface PaymentsDeps {
  store: Store;
  clock: Clock;
  queue: { capacity: number; batchMax: number; flushMs: number };
}

export function createPaymentsApp(_deps: PaymentsDeps): PaymentsApp {
  return {
    async record() {
      throw new DomainError("internal", "not implemented");
    },
    async drain() {},
  };
}
