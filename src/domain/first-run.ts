/**
 * The first run: while the store has no account, the server issues a
 * one-time setup token at start (printed as a URL, docs/running.md) and the
 * setup page spends it to create the owner's account, the first site and a
 * reports key for the dashboard. The token is 32 random bytes; only its
 * SHA-256 is kept, it expires after SETUP_TOKEN_TTL_MS, and it can be used
 * once. A restart with still no account issues a fresh one (the last is
 * replaced, so only the latest printed URL works).
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { type Admin, adminInputRules } from "./admin.js";
import type { Clock } from "./clock.js";
import { errors } from "./errors.js";
import { KEY_PLAN } from "./plans.js";
import { DEFAULT_TIME_ZONE, parseTimeZone } from "./site-settings.js";
import type { Store } from "./store/store.js";

/** How long a setup URL works: long enough to open it, short enough not to linger in a log. */
export const SETUP_TOKEN_TTL_MS = 60 * 60 * 1000;

/** Where the setup page is; the token goes in its `token` query parameter. */
export const SETUP_PATH = "/dashboard/setup";

/** What the setup page sends. */
export interface SetupInput {
  token: string;
  ownerEmail: string;
  /** The account's name; the first hostname when empty. */
  accountName?: string;
  hostnames: string[];
  /** IANA time zone of the site, e.g. `Europe/Paris`; UTC when empty. */
  timeZone?: string;
}

/** What the setup created; `reportsKey` is shown this once. */
export interface SetupResult {
  accountId: string;
  ownerUserId: string;
  siteId: string;
  timeZone: string;
  reportsKeyId: string;
  reportsKey: string;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest();

/** The first-run operations, bound to a store, a clock and the admin rules. */
export function createFirstRun(deps: { store: Store; clock: Clock; admin: Admin }) {
  const { store, clock, admin } = deps;

  /**
   * The stored token, checked against `token`: the hashes are compared in
   * constant time; then use, expiry, and whether an account exists already. Throws the page's exact refusals.
   */
  async function checkToken(token: string): Promise<Buffer> {
    const stored = await store.getSetupToken();
    const given = sha256(token);
    const expected = Buffer.from(stored?.hash ?? "", "hex");
    // Both are 32 bytes when a token was issued; a missing one compares against zeros.
    const same = timingSafeEqual(given, expected.length === 32 ? expected : Buffer.alloc(32));
    if (!stored || !same || token === "") throw errors.setupTokenInvalid();
    if (stored.usedAt !== undefined) throw errors.setupTokenUsed();
    if (clock.now() >= stored.expiresAt) throw errors.setupTokenExpired();
    // An account made meanwhile by the admin CLI: nothing is left to set up.
    if (await store.hasAccount()) throw errors.setupDone();
    return given;
  }

  return {
    /**
     * A new setup token when the store has no account (replacing any earlier
     * one), or undefined when it has one. Called once per start.
     */
    async issueSetupToken(): Promise<string | undefined> {
      if (await store.hasAccount()) return undefined;
      const token = randomBytes(32).toString("base64url");
      const now = clock.now();
      await store.saveSetupToken({
        hash: sha256(token).toString("hex"),
        createdAt: now,
        expiresAt: now + SETUP_TOKEN_TTL_MS,
      });
      return token;
    },

    /** Whether `token` would be accepted now (the page asks before it shows the form). */
    async checkSetupToken(token: string): Promise<void> {
      await checkToken(token);
    },

    /**
     * Spends the token and creates the owner's account (Scale plan: a
     * self-hosted service has every feature), the first site and a reports
     * key. Every input is checked before the token is spent, so a typo does
     * not use it up.
     */
    async completeSetup(input: SetupInput): Promise<SetupResult> {
      const hash = await checkToken(input.token);
      const ownerEmail = adminInputRules.email(input.ownerEmail);
      const hostnames = input.hostnames.map((h) => h.trim()).filter((h) => h !== "");
      if (hostnames.length === 0) throw errors.invalid("at least one hostname is required");
      hostnames.forEach(adminInputRules.hostname);
      const accountName = input.accountName?.trim() || adminInputRules.hostname(hostnames[0] ?? "");
      if (accountName.length > 200) throw errors.invalid("name must be 1 to 200 characters");
      // The site's rule, checked before the token is spent; absent or "": UTC.
      const timeZone = parseTimeZone(input.timeZone?.trim() || DEFAULT_TIME_ZONE);
      if (!(await store.useSetupToken(hash.toString("hex"), clock.now()))) {
        // Another request spent it between the check and now.
        throw errors.setupTokenUsed();
      }
      const { accountId, ownerUserId } = await admin.createAccount({
        name: accountName,
        plan: KEY_PLAN,
        ownerEmail,
      });
      const { siteId } = await admin.createSite({ accountId, hostnames, timeZone });
      const { keyId, key } = await admin.createKey({
        siteId,
        name: "dashboard",
        scopes: ["reports"],
        actorUserId: ownerUserId,
      });
      return { accountId, ownerUserId, siteId, timeZone, reportsKeyId: keyId, reportsKey: key };
    },
  };
}

export type FirstRun = ReturnType<typeof createFirstRun>;
