/**
 * The dashboard's one way to the service: ReportsService over the Connect
 * protocol (JSON) on the page's own origin, with the signed-in token as a
 * bearer token. The token lives in sessionStorage: gone with the tab.
 */
import {
  type Client,
  Code,
  ConnectError,
  createClient,
  type Interceptor,
} from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { ReportsService } from "../../gen/ingest/v1/reports_pb.js";

const TOKEN_KEY = "ingest.dashboard.token";

/** The token of this tab, if signed in. */
export function storedToken(): string | undefined {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

export function storeToken(token: string | undefined): void {
  if (token === undefined) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

/** A ReportsService client that sends `token`. */
export function reportsClient(token: string): Client<typeof ReportsService> {
  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
  return createClient(
    ReportsService,
    createConnectTransport({
      baseUrl: location.origin,
      useBinaryFormat: false,
      interceptors: [bearer],
    }),
  );
}

/** Whether an error means the token is wrong, revoked or unset on the server. */
export function isAuthError(err: unknown): boolean {
  const e = ConnectError.from(err);
  return e.code === Code.Unauthenticated || e.code === Code.PermissionDenied;
}

/** A sentence for the page about a failed call. */
export function describeError(err: unknown): string {
  const e = ConnectError.from(err);
  const sentence = explain(e);
  // The service's own reason is always shown (e.g. "admin API is disabled: ADMIN_TOKEN is not set").
  return isAuthError(e) ? `${sentence} The service said: ${e.rawMessage}.` : sentence;
}

function explain(e: ConnectError): string {
  if (e.code === Code.Unauthenticated && e.rawMessage === "unknown or revoked API key") {
    return "This key was not accepted: it is unknown or has been revoked. Ask an owner or admin of the site for a new reports key.";
  }
  if (e.code === Code.PermissionDenied && e.rawMessage === "api key does not belong to this site") {
    return "This key reads another site only: sign in again with the site id left empty to open its own site.";
  }
  if (e.code === Code.PermissionDenied && e.rawMessage === "API key lacks the reports scope") {
    return "This key cannot read reports: only a key with the reports scope can (a key that sends events or payments cannot).";
  }
  if (e.code === Code.Unauthenticated || e.code === Code.PermissionDenied) {
    return "This token was not accepted: check it (a reports key or the service's ADMIN_TOKEN) and sign in again.";
  }
  if (e.code === Code.NotFound) return `Not found: ${e.rawMessage}`;
  if (e.code === Code.InvalidArgument) return `The request was refused: ${e.rawMessage}`;
  if (e.code === Code.Unavailable || e.code === Code.Unknown) {
    return "The service could not be reached. Try again in a moment.";
  }
  return `The service answered: ${e.rawMessage}`;
}
