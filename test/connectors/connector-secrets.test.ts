/**
 * A connector's signing secret never reaches the logs, an answer after
 * creation, or an error: over AdminService, the webhook door and failures.
 */
import { describe, expect, it } from "vitest";
import { AdminService } from "../../gen/ingest/v1/admin_pb.js";
import { rpcClient, rpcError } from "../helpers/rpc-clients.js";
import { charge, signStripe, stripeEvent } from "../helpers/stripe-events.js";
import { ADMIN_TOKEN, postJson } from "../helpers/test-server.js";
import { useTestServer } from "../helpers/use-test-server.js";

const SECRET = "whsec_NEVER_IN_LOGS_0123456789";
const NOW_S = 1773230400;
const auth = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };

describe("connector secrets", () => {
  const lines: string[] = [];
  const ctx = useTestServer({
    env: { LOG_LEVEL: "debug" },
    logStream: { write: (line) => lines.push(line) },
  });

  it("is not logged, returned or quoted, whatever happens to the requests that carry it", async () => {
    const client = rpcClient(AdminService, ctx.server.url, "connect");
    const created = await client.createConnector(
      {
        siteId: ctx.tenant.siteId,
        provider: "stripe",
        secret: SECRET,
        actorUserId: ctx.tenant.ownerUserId,
      },
      auth,
    );
    const refused = await rpcError(
      client.createConnector(
        {
          siteId: "site_nope",
          provider: "stripe",
          secret: SECRET,
          actorUserId: ctx.tenant.ownerUserId,
        },
        auth,
      ),
    );
    expect(refused.message).toBe("site site_nope not found");
    const listed = await client.listConnectors({ siteId: ctx.tenant.siteId }, auth);

    const { payload, header } = signStripe(
      stripeEvent("charge.succeeded", charge(), NOW_S),
      SECRET,
      NOW_S,
    );
    const path = `${ctx.server.url}${created.urlPath}`;
    const ok = await postJson(path, payload, { headers: { "stripe-signature": header } });
    expect(ok.status).toBe(200);
    const wrong = await postJson(path, payload.replace("usd", "eur"), {
      headers: { "stripe-signature": header },
    });
    expect(wrong.status).toBe(400);

    const signature = header.split("v1=")[1] as string;
    for (const text of [
      JSON.stringify(created),
      JSON.stringify(listed),
      ok.text,
      wrong.text,
      lines.join("\n"),
    ]) {
      expect(text).not.toContain("NEVER_IN_LOGS");
      expect(text).not.toContain(signature);
    }
    // The requests were logged, by path only.
    expect(lines.some((l) => l.includes(`/api/v1/connectors/${created.connectorId}`))).toBe(true);
  });
});
