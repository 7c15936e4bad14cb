/** The first run's setup token in SQLite (migration 18): one row at most. */
import type { SetupTokenRecord, StoreSetupPart } from "../port.js";
import { type Db, opt } from "./open-sqlite.js";

interface SetupRow {
  hash: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export function createSqliteSetup(db: Db): StoreSetupPart {
  const s = {
    anyAccount: db.prepare("SELECT 1 FROM accounts LIMIT 1"),
    save: db.prepare(
      `INSERT INTO setup_token (id, hash, created_at, expires_at, used_at) VALUES (1, ?, ?, ?, NULL)
       ON CONFLICT (id) DO UPDATE SET hash = excluded.hash, created_at = excluded.created_at,
         expires_at = excluded.expires_at, used_at = NULL`,
    ),
    get: db.prepare("SELECT hash, created_at, expires_at, used_at FROM setup_token WHERE id = 1"),
    use: db.prepare(
      "UPDATE setup_token SET used_at = ? WHERE id = 1 AND hash = ? AND used_at IS NULL",
    ),
  };
  return {
    async hasAccount() {
      return s.anyAccount.get() !== undefined;
    },
    async saveSetupToken(t: SetupTokenRecord) {
      s.save.run(t.hash, t.createdAt, t.expiresAt);
    },
    async getSetupToken() {
      const r = s.get.get() as SetupRow | undefined;
      if (!r) return undefined;
      return {
        hash: r.hash,
        createdAt: r.created_at,
        expiresAt: r.expires_at,
        usedAt: opt(r.used_at),
      };
    },
    async useSetupToken(hash, at) {
      return s.use.run(at, hash).changes === 1;
    },
  };
}
