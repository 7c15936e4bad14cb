/** The events application: what every door (REST, Connect, the public collect endpoint) calls. */
import type { KeyPrincipal } from "../store/store.js";

/** What the door knows of the HTTP client that sent the request. */
export interface ClientInfo {
  /** The caller's address (X-Forwarded-For only from trusted proxies). */
  ip: string | undefined;
  /** The caller's User-Agent header. */
  userAgent: string | undefined;
}

/** What the collect door knows of a browser's request besides its address and user agent. */
export interface BrowserClientInfo extends ClientInfo {
  /** The `Origin` header, when the client sent one. */
  origin: string | undefined;
}

export interface EventsResult {
  /** Events stored. */
  accepted: number;
  /** Events dropped as bots (stored nowhere, not counted). */
  dropped: number;
  /** Events the account may still send this UTC month. */
  quotaRemaining: number;
  /**
   * The visitor id of the request's first event (all events of one browser
   * request share it): its daily id, or its `vid` when it carried one (the
   * value a site passes as `customer.visitor_id`); absent when nothing was stored.
   */
  visitorId?: string;
  /**
   * Stored events whose `ts` lay outside [receipt − 1 h, receipt + 1 min] and
   * was replaced by the receipt time (a `ts` in seconds, a wrong clock).
   */
  tsReplaced: number;
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
  /**
   * The same for a browser, without a key: the site id in the body is the
   * credential, the `Origin` (when sent) must be one of the site's hosts, and
   * the visitor's ip and user agent come only from the connection (`ip`/`ua`
   * in the body are refused).
   */
  collect(body: Record<string, unknown>, client: BrowserClientInfo): Promise<EventsResult>;
  /** Writes what is queued; called on shutdown. */
  drain(): Promise<void>;
}
