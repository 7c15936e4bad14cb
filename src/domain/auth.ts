/** Authentication of the two public endpoints by API key. */

import { createBoundedMap } from "../lib/bounded-map.js";
import type { Clock } from "./clock.js";
import { errors, storeError } from "./errors.js";
import { hashApiKey, isWellFormedKey, parseBearerKey } from "./keys.js";
import type { KeyPrincipal, Scope, Store } from "./store/store.js";

/** How often a key's last-used time is written: once a minute per key is plenty. */
const TOUCH_INTERVAL_MS = 60_000;

export interface Authenticator {
  /**
   * Resolves the key in an `Authorization` header value and checks it has
   * `scope`. Throws the spec's 401 or 403. A deleted key fails on the very
   * next request, in every process: the store's key lookup is checked against
   * its directory version on every call.
   */
  authenticate(header: string | undefined | null, scope: Scope): Promise<KeyPrincipal>;
}

/** Keys whose last touch this process remembers; beyond, it forgets the least used (a few extra touches). */
const MAX_TOUCHED = 10_000;

export function createAuthenticator(deps: { store: Store; clock: Clock }): Authenticator {
  const { store, clock } = deps;
  // The principal may come from a cache (directory-cache.ts) with an old
  // lastUsedAt: remember this process's own touches so they stay throttled.
  const touched = createBoundedMap<string, number>(MAX_TOUCHED);
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
      const last = Math.max(
        principal.lastUsedAt ?? -Infinity,
        touched.get(principal.id) ?? -Infinity,
      );
      if (now - last >= TOUCH_INTERVAL_MS) {
        touched.set(principal.id, now);
        // Best effort and off the request path: a failed touch must not fail the request.
        store.touchKey(principal.id, now).catch(() => {});
      }
      return principal;
    },
  };
}
