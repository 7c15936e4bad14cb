/** Shared helpers of the tracker and collect endpoint tests. */
import { BROWSER_UA } from "./fixtures.js";
import { postJson } from "./test-server.js";

export { BROWSER_UA };

/** POSTs a body to /api/v1/collect the way a page does: no key, a browser UA, text/plain. */
export function collect(
  baseUrl: string,
  body: unknown,
  headers: Record<string, string> = {},
): ReturnType<typeof postJson> {
  return postJson(`${baseUrl}/api/v1/collect`, body, {
    headers: {
      "content-type": "text/plain;charset=UTF-8",
      "user-agent": BROWSER_UA,
      origin: "https://example.com",
      ...headers,
    },
  });
}
