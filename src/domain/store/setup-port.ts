/** The first-run part of the store port: the one-time setup token (src/domain/first-run.ts). */

/** The setup token of a store that has no account yet: only its SHA-256 is kept. */
export interface SetupTokenRecord {
  /** SHA-256 of the token, lowercase hex. */
  hash: string;
  createdAt: number;
  /** Epoch ms after which the token is refused. */
  expiresAt: number;
  /** When it was used; a used token is refused. */
  usedAt?: number;
}

/** The first-run part of the store port. Every method may reject when the database is unreachable. */
export interface StoreSetupPart {
  /** Whether any account exists. */
  hasAccount(): Promise<boolean>;
  /** Keeps `token` as the one setup token, replacing any earlier one. */
  saveSetupToken(token: SetupTokenRecord): Promise<void>;
  /** The setup token, if one was ever issued (used or not). */
  getSetupToken(): Promise<SetupTokenRecord | undefined>;
  /**
   * Marks the token with this hash used at `at`, atomically: resolves true
   * for exactly one caller, false when it is another token's hash or was
   * used already.
   */
  useSetupToken(hash: string, at: number): Promise<boolean>;
}
