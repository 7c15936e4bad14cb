/** The events application: what both doors (REST and Connect) call. */
import type { KeyPrincipal } from "../store/store.js";

/** What the door knows of the HTTP client that sent the request. */
export interface ClientInfo {
  /** The caller's address (X-Forwarded-For only from trusted proxies). */
  ip: string | undefined;
  /** The caller's User-Agent header. */
  userAgent: string | undefined;
}

export interface EventsResult {
  /** Events stored. */
  accepted: number;
  /** Events dropped as bots (stored nowhere, not counted). */
  dropped: number;
  /** Events the account may still send this UTC month. */
  quotaRemaining: number;
}

export interface EventsApp {
  /**
   * Checks, enriches and durably stores one event or a batch `{s, b}`.
   * `body` is plain JSON, already checked for unknown fields and JSON types.
   * Resolves only after the events are durably written.
   */
  record(
    principal: KeyPrincipal,
    body: Record<string, unknown>,
    client: ClientInfo,
  ): Promise<EventsResult>;
  /** Writes what is queued; called on shutdown. */
  drain(): Promise<void>;
}
