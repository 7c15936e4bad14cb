/**
 * The probes: GET (and HEAD) /healthz, alive while the process answers, and
 * /readyz, ready while the store can take a write. Other verbs get 405.
 */
import type { FastifyPluginAsync } from "fastify";
import { errors } from "../domain/errors.js";
import type { Readiness } from "../lib/readiness.js";
import { sendError } from "./envelope.js";
import { registerMethodNotAllowed } from "./method-not-allowed.js";

/** What the probes read. */
export interface ProbesOptions {
  readiness: Readiness;
  store: { readonly kind: string };
}

/** The probes plugin. */
export const probes: FastifyPluginAsync<ProbesOptions> = async (scope, { readiness, store }) => {
  scope.get("/healthz", async () => ({ ok: true, data: { status: "alive" } }));
  scope.get("/readyz", async (_request, reply) => {
    if (await readiness.check()) return { ok: true, data: { status: "ready", store: store.kind } };
    return sendError(reply, errors.storeCannotTakeWrites());
  });
  // Read-only: other verbs get 405 with Allow, as on the API paths.
  for (const url of ["/healthz", "/readyz"]) {
    registerMethodNotAllowed(scope, { url, allow: ["GET", "HEAD"], use: "GET" });
  }
};
