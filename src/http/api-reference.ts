/**
 * The API reference on the server itself: GET /openapi.json (the committed
 * document generated from proto/ by tools/protoc-gen-openapi.ts) and GET
 * /docs (Swagger UI rendering it). Static mode: the document is not rebuilt
 * from the routes, so what is served is what CI checked.
 */
import fastifySwagger from "@fastify/swagger";
import fastifySwaggerUi from "@fastify/swagger-ui";
import type { FastifyPluginAsync } from "fastify";
import openapi from "../../openapi/openapi.json" with { type: "json" };

/** The OpenAPI 3.1 document of the REST door. */
export const openapiDocument = openapi;

/** The API reference plugin. */
export const apiReference: FastifyPluginAsync = async (app) => {
  await app.register(fastifySwagger, {
    mode: "static",
    specification: { document: structuredClone(openapi) as never },
  });
  await app.register(fastifySwaggerUi, {
    routePrefix: "/docs",
    // The UI reads its copy of the same document from /docs/json.
    uiConfig: { deepLinking: true },
    staticCSP: true,
  });
  app.get("/openapi.json", { schema: { hide: true } }, async (_request, reply) =>
    reply.type("application/json; charset=utf-8").send(openapi),
  );
};
