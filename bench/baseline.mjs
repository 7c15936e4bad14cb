/**
 * The baseline of `npm run bench`: a bare Fastify 5 app with one route that
 * parses the same JSON body as the events endpoint and answers 204. No auth,
 * no validation, no store: what one Node process and Fastify can do on this
 * machine with the same load generator.
 *
 *   PORT=0 node bench/baseline.mjs   → prints {"port":N} on stdout when listening
 */
import Fastify from "fastify";

const app = Fastify({ logger: false, bodyLimit: 64 * 1024 });
app.post("/api/v1/events", async (request, reply) => {
  // Fastify's default JSON parser has run: make sure the body really was parsed.
  if (typeof request.body !== "object" || request.body === null) {
    return reply.code(400).send();
  }
  return reply.code(204).send();
});
app.get("/healthz", async () => ({ ok: true }));

await app.listen({ host: "127.0.0.1", port: Number(process.env.PORT ?? 0) });
const { port } = app.server.address();
process.stdout.write(`${JSON.stringify({ port })}\n`);

const stop = () => app.close().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
