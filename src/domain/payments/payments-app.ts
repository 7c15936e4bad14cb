/** The payments application: what both doors (REST and Connect) call. */
import type { KeyPrincipal } from "../store/store.js";

export interface PaymentsApp {
  /**
   * Validates and durably records one payment for the key's site. `input` is
   * the spec's Payment body as plain JSON values (snake_case keys), already
   * checked for unknown fields and JSON types by the door.
   */
  record(principal: KeyPrincipal, input: Record<string, unknown>): Promise<{ paymentId: string }>;
  /** Writes what is queued; called on shutdown. */
  drain(): Promise<void>;
}
