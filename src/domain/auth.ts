/** Authentication of the two public endpoints by API key. */

import type { Clock } from "./clock.js";
import { errors, storeError } from "./errors.js";
import { hashApiKey, isWellFormedKey, parseBearerKey } from "./keys.js";
import type { KeyPrincipal, Scope, Store } from "./store/store.js";

/** How often a key's last-used time is written: once a minute per key is plenty. */
const TOUCH_INTERVAL_MS = 60_000;

export interface Authenticator {
  /**
   * Resolves the key in an `Authorization` header value and checks it has
   * `scope`. Throws the spec's 401 or 403. Looks the key up on every call: a
   * deleted key fails on the very next request, in every process.
   */
  authenticate(header: string | undefined | null, scope: Scope): Promise<KeyPrincipal>;
}

export function createAuthenticator(deps: { store: Store; clock: Clock }): Authenticator {
  const { store, clock } = deps;
  return {
    async authenticate(header, scope) {
      const key = parseBearerKey(header);
      // A key of the wrong shape cannot be in the store: skip the lookup.
      if (!isWellFormedKey(key)) throw errors.unknownKey();
      const principal = await store.findKeyByHash(hashApiKey(key)).catch((err) => {
        throw storeError(err);
      });
      if (!principal) throw errors.unknownKey();
      if (!principal.scopes.includes(scope)) throw errors.missingScope(scope);
      const now = clock.now();
      if (principal.lastUsedAt === undefined || now - principal.lastUsedAt >= TOUCH_INTERVAL_MS) {
        // Best effort and off the request path: a failed touch must not fail the request.
        store.touchKey(principal.id, now).catch(() => {});
      }
      return principal;
    },
  };
}
