/**
 * A test's own Query or Funnel call beside a dashboard page: the page's calls
 * may hold the site's query slots (ANALYTICS_QUERIES_PER_SITE), and the
 * service then refuses with `resource_exhausted`. The call is made again once
 * a slot frees, until the scaled time limit (timeouts.ts) runs out.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { BASE_TIMEOUTS, scaled } from "./timeouts.js";

/** Calls `call` until it is not refused for the site's query slots. */
export async function whenQuerySlotFree<T>(call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + scaled(BASE_TIMEOUTS.childReady);
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if (ConnectError.from(err).code !== Code.ResourceExhausted || Date.now() > deadline) {
        throw err;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
