/**
 * What start-up needs beyond reading the settings: opening what they name
 * (the store, the GeoIP file, the listening address) with failures turned into
 * one line that names the variable to fix, and a store URL that is safe to
 * print.
 */
import { openGeo } from "./domain/events/geo.js";
import type { Store } from "./store/port.js";

/**
 * A setting names something that cannot be used (a file that cannot be
 * opened, a host that does not resolve, a port in use). The message is one
 * line that starts with the variable's name; start-up stops with exit code 2,
 * as for an invalid value.
 */
export class StartupError extends Error {
  override readonly name = "StartupError";
}

/**
 * `STORE_URL` as it may be printed: a SQLite path as is; a MongoDB URL
 * without user, password or query options (which may hold secrets such as
 * `tlsCertificateKeyFilePassword`), keeping scheme, hosts and database.
 */
export function redactStoreUrl(url: string): string {
  const m = /^(mongodb(?:\+srv)?:\/\/)([^/?]*)(\/[^?]*)?/.exec(url);
  if (!m) return url;
  const [, scheme, authority = "", path = ""] = m;
  const at = authority.lastIndexOf("@");
  const hosts = at >= 0 ? `***@${authority.slice(at + 1)}` : authority;
  return `${scheme}${hosts}${path}${url.includes("?") ? "?…" : ""}`;
}

/** The hosts of a MongoDB URL, for messages. */
function mongoHosts(url: string): string {
  const authority = /^mongodb(?:\+srv)?:\/\/([^/?]*)/.exec(url)?.[1] ?? "";
  return authority.slice(authority.lastIndexOf("@") + 1);
}

const SYSTEM_REASONS: Record<string, string> = {
  ENOENT: "no such file or directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOTDIR: "a part of the path is not a directory",
  EEXIST: "a part of the path is a file, not a directory",
  EISDIR: "it is a directory",
  EROFS: "read-only file system",
  ENOTFOUND: "the name does not resolve",
  EAI_AGAIN: "the name could not be resolved (DNS unavailable)",
  ECONNREFUSED: "connection refused",
  SQLITE_CANTOPEN: "unable to open the database file",
  SQLITE_NOTADB: "the file is not a SQLite database",
  SQLITE_CORRUPT: "the database file is corrupt",
  SQLITE_READONLY: "the database is read-only",
  SQLITE_BUSY: "the database is locked by another process",
};

/**
 * Why an operation failed, in a few words on one line: a known system or
 * SQLite code in plain words, else the error's own first line, with `secret`
 * (a URL that may hold credentials) cut out.
 */
export function reasonOf(err: unknown, secret?: string): string {
  const code = (err as { code?: unknown })?.code;
  if (typeof code === "string" && SYSTEM_REASONS[code]) return SYSTEM_REASONS[code];
  let text = err instanceof Error ? err.message : String(err);
  if (secret) text = text.split(secret).join(redactStoreUrl(secret));
  text = text.split("\n")[0]?.trim() || (err instanceof Error ? err.name : "unknown error");
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

/** Opens the store named by STORE_URL; a failure names STORE_URL and the path or hosts. */
export async function openStartupStore(
  url: string,
  open: (url: string) => Promise<Store>,
): Promise<Store> {
  try {
    return await open(url);
  } catch (err) {
    if (url.startsWith("sqlite:")) {
      throw new StartupError(
        `STORE_URL: cannot open the SQLite database ${url.slice("sqlite:".length)}: ${reasonOf(err)}`,
      );
    }
    throw new StartupError(
      `STORE_URL: cannot reach MongoDB at ${mongoHosts(url)}: ${reasonOf(err, url)}`,
    );
  }
}

/** Opens GEOIP_DB once, so a wrong path stops start-up with a message naming it. */
export async function checkGeoDb(path: string | undefined): Promise<void> {
  if (path === undefined) return;
  try {
    await openGeo(path);
  } catch (err) {
    const reason =
      (err as { code?: unknown })?.code === undefined
        ? "not a MaxMind DB (MMDB) file"
        : reasonOf(err);
    throw new StartupError(`GEOIP_DB: cannot open ${path}: ${reason}`);
  }
}

/** A failure to listen on HOST:PORT, naming the variable to change. */
export function listenError(err: unknown, host: string, port: number): Error {
  const code = (err as { code?: unknown })?.code;
  switch (code) {
    case "EADDRINUSE":
      return new StartupError(`PORT: ${port} is already in use on ${host}`);
    case "EACCES":
      return new StartupError(`PORT: permission denied to listen on ${host}:${port}`);
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_FAIL":
    case "EAI_NONAME":
      return new StartupError(`HOST: cannot resolve ${host}: ${reasonOf(err)}`);
    case "EADDRNOTAVAIL":
      return new StartupError(`HOST: ${host} is not an address of this machine`);
    default:
      return err instanceof Error ? err : new Error(String(err));
  }
}
