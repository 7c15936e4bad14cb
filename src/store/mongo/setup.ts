/** The first run's setup token in MongoDB: one document of `setup_tokens`, hash only. */
import type { SetupTokenRecord, StoreSetupPart } from "../port.js";
import { optMs, toDate } from "./documents.js";
import type { Collections } from "./schema.js";

/** The one document's id: a new token replaces the last. */
const FIRST_RUN = "first_run";

export function createMongoSetup(c: Collections): StoreSetupPart {
  return {
    async hasAccount() {
      return (await c.accounts.findOne({}, { projection: { _id: 1 } })) !== null;
    },
    async saveSetupToken(t: SetupTokenRecord) {
      await c.setupTokens.replaceOne(
        { _id: FIRST_RUN },
        { hash: t.hash, created_at: toDate(t.createdAt), expires_at: toDate(t.expiresAt) },
        { upsert: true },
      );
    },
    async getSetupToken() {
      const d = await c.setupTokens.findOne({ _id: FIRST_RUN });
      if (!d) return undefined;
      return {
        hash: d.hash,
        createdAt: d.created_at.getTime(),
        expiresAt: d.expires_at.getTime(),
        usedAt: optMs(d.used_at),
      };
    },
    async useSetupToken(hash, at) {
      // One conditional update: of two concurrent uses, one matches.
      const r = await c.setupTokens.updateOne(
        { _id: FIRST_RUN, hash, used_at: { $exists: false } },
        { $set: { used_at: toDate(at) } },
      );
      return r.modifiedCount === 1;
    },
  };
}
