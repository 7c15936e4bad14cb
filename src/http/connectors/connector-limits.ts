/** The connectors' webhook door: its path and body limit, shared with the OpenAPI generator. */

/** The route; users paste `/api/v1/connectors/<connector_id>` into their provider. */
export const CONNECTOR_ROUTE = "/api/v1/connectors/:connector_id";

/**
 * 1 MB. A provider event carries one object: Stripe's largest, an invoice
 * with its first lines, or a Paddle transaction with its items and
 * breakdown, stay within tens of KB; 1 MB leaves room for very long invoices
 * and metadata while bounding what an unauthenticated caller can make the
 * server read and hash.
 */
export const CONNECTOR_BODY_LIMIT = 1024 * 1024;
