/**
 * A provider event is acknowledged only once what it wrote is durable: the
 * 200 waits for the WAL sync of its commit, as the payments endpoint's does.
 */
import { describe, expect, it } from "vitest";
import { settled } from "../helpers/settled.js";
import { charge, signStripe, stripeEvent } from "../helpers/stripe-events.js";
import { postJson } from "../helpers/test-server.js";
import { withTestServer } from "../helpers/use-test-server.js";

const SECRET = "whsec_durable_0123456789";
const NOW_S = 1773230400;

describe("connector durability", () => {
  it("answers a Stripe event only after the WAL sync of its commit", async () => {
    let hold = false;
    const held: (() => void)[] = [];
    const syncFile = () =>
      hold ? new Promise<void>((resolve) => held.push(resolve)) : Promise.resolve();
    await withTestServer({ syncFile }, async (server, tenant) => {
      try {
        const { urlPath } = await server.admin.createConnector({
          siteId: tenant.siteId,
          provider: "stripe",
          secret: SECRET,
          actorUserId: tenant.ownerUserId,
        });
        const ch = charge();
        const { payload, header } = signStripe(
          stripeEvent("charge.succeeded", ch, NOW_S),
          SECRET,
          NOW_S,
        );
        hold = true;
        const delivery = postJson(`${server.url}${urlPath}`, payload, {
          headers: { "stripe-signature": header },
        });
        // Its commit reaches the held sync, however slow the machine.
        while (held.length === 0) await new Promise((r) => setTimeout(r, 5));
        expect(await settled(delivery)).toBe(false);
        hold = false;
        for (const release of held.splice(0)) release();
        const res = await delivery;
        expect(res.status).toBe(200);
        expect((await server.store.getPayment(tenant.siteId, ch.id as string))?.amountMinor).toBe(
          2999,
        );
      } finally {
        // Released before the server closes: a held sync would keep close() waiting.
        hold = false;
        for (const release of held.splice(0)) release();
      }
    });
  });
});
