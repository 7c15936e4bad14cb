/** Identifiers for the records the service creates itself. */
import { randomBytes } from "node:crypto";

/** A random id with a readable prefix, e.g. `acct_3f9c…` (96 random bits). */
export function newId(prefix: "acct" | "user" | "site" | "key" | "conn"): string {
  return `${prefix}_${randomBytes(12).toString("hex")}`;
}
