/**
 * What a connector is made of and how it is shown: the providers, the input
 * rules for creating one, and its public view (never its secret).
 */
import { errors } from "../errors.js";
import type { ConnectorRecord } from "../store/store.js";
import { isOneOf, PROVIDERS, type Provider } from "../vocabulary.js";

/** The path a connector receives its provider's webhooks on. */
export function connectorUrlPath(connectorId: string): string {
  return `/api/v1/connectors/${connectorId}`;
}

/** A connector as the admin API and CLI show it: no secret. */
export interface ConnectorView {
  connectorId: string;
  siteId: string;
  provider: Provider;
  urlPath: string;
  createdBy: string;
  createdAt: number;
}

export function connectorView(c: ConnectorRecord): ConnectorView {
  return {
    connectorId: c.id,
    siteId: c.siteId,
    provider: c.provider,
    urlPath: connectorUrlPath(c.id),
    createdBy: c.createdBy,
    createdAt: c.createdAt,
  };
}

/** Longest secret accepted: providers' secrets are well under 100 characters. */
const SECRET_MAX = 512;

/**
 * Checks a connector's provider and signing secret. The messages never quote
 * the secret: it may be a real one pasted in the wrong place.
 */
export function parseConnectorInput(input: { provider: string; secret: string }): {
  provider: Provider;
  secret: string;
} {
  const provider = input.provider.trim().toLowerCase();
  if (!isOneOf(PROVIDERS, provider)) throw errors.unknownProvider(PROVIDERS);
  // Pasted secrets often carry a trailing newline; inner whitespace is never part of one.
  const secret = input.secret.trim();
  if (secret.length < 1 || secret.length > SECRET_MAX || /\s/.test(secret)) {
    throw errors.badConnectorSecret(SECRET_MAX);
  }
  if (provider === "stripe" && !secret.startsWith("whsec_")) {
    throw errors.stripeSecretPrefix();
  }
  return { provider, secret };
}
