/** What the Connect handlers know about the HTTP client, passed from Fastify. */
import { createContextKey } from "@connectrpc/connect";
import type { ClientInfo } from "../domain/events/events-app.js";

export const clientInfoKey = createContextKey<ClientInfo>(
  { ip: undefined, userAgent: undefined },
  { description: "the caller's address and user agent" },
);
