/**
 * The built server as the benchmarks run it: a fresh tenant in a fresh data
 * directory (made by the build under test, so its schema is its own), the
 * server started on it with the bench's settings, and what it durably stored,
 * read from the SQLite file. Shared by bench/run.mjs and bench/new-visitors.mjs.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { HEADER_UA } from "./bodies.mjs";
import { cannon } from "./load.mjs";
import { freePort, startProcess } from "./procs.mjs";

export const ADMIN_TOKEN = "bench-admin-token-0123456789";

/** The server settings of every bench run (the defaults, spelled out so a result file records them). */
export const SERVER_ENV = {
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  ADMIN_TOKEN,
  INGEST_QUEUE_CAPACITY: "10000",
  INGEST_BATCH_MAX: "512",
  INGEST_FLUSH_MS: "2",
  INGEST_BATCHES_IN_FLIGHT: "4",
};

/**
 * A fresh data directory `dir` made by the build `dist`: one Scale account,
 * site example.com and an events+payments key.
 */
export async function freshTenant(dist, dir) {
  const { createSqliteStore } = await import(join(dist, "src/store/sqlite/sqlite-store.js"));
  const { createAdmin } = await import(join(dist, "src/domain/admin.js"));
  mkdirSync(dir, { recursive: true });
  const dbPath = join(dir, "ingest.sqlite");
  const store = createSqliteStore(dbPath);
  try {
    const admin = createAdmin({ store, clock: { now: () => Date.now() } });
    const { accountId, ownerUserId } = await admin.createAccount({
      name: "Bench",
      plan: "scale",
      ownerEmail: "bench@example.com",
    });
    const { siteId } = await admin.createSite({ accountId, hostnames: ["example.com"] });
    // The collect door's per-site ceiling (where the build has one) at its largest,
    // so a bench's collect stream measures the server, not the ceiling.
    const limits = await import(join(dist, "src/domain/collect-limits.js")).catch(() => undefined);
    if (limits?.createCollectLimits) {
      await limits
        .createCollectLimits({ store })
        .setSiteCollectLimit({ siteId, perMinute: 1_000_000 });
    }
    const { key } = await admin.createKey({
      siteId,
      name: "bench",
      scopes: ["events", "payments"],
      actorUserId: ownerUserId,
    });
    return { dist, dbPath, siteId, key };
  } finally {
    await store.close();
  }
}

/** Rows in a table now, read from the file (WAL: readers do not block the server). */
export function countRows(dbPath, table) {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(`SELECT count(*) AS n FROM ${table}`).get().n;
  } finally {
    db.close();
  }
}

/**
 * Rows durably stored in `table`, read from the file (WAL: readers do not
 * block the server). For events, the highest id given: since the events
 * table became the analytics feed's outbox (migration 19) the feed deletes
 * the events it moved to DuckDB, so counting its rows undercounts; ids are
 * given in commit order and never reused there (AUTOINCREMENT, recorded in
 * sqlite_sequence), and an older build never deletes during a bench, so
 * its highest rowid is its count.
 */
export function storedRows(dbPath, table) {
  if (table !== "events") return countRows(dbPath, table);
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const top = db.prepare("SELECT coalesce(max(id), 0) AS n FROM events").get().n;
    const seq = db
      .prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'sqlite_sequence'")
      .get().n
      ? db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'events'").get()?.seq
      : undefined;
    return Math.max(top, seq ?? 0);
  } finally {
    db.close();
  }
}

/**
 * Starts `dist`'s server on `dbPath` with the bench settings plus `env`;
 * under `node --cpu-prof` writing to `profDir` when given.
 */
export async function startServer({ dist, dbPath, env = {}, profDir }) {
  const port = await freePort();
  const args = [];
  if (profDir) args.push("--cpu-prof", `--cpu-prof-dir=${profDir}`);
  args.push(join(dist, "src/main.js"));
  return startProcess({
    name: "server",
    args,
    port,
    readyPath: "/readyz",
    env: { ...SERVER_ENV, PORT: String(port), STORE_URL: `sqlite:${dbPath}`, ...env },
  });
}

/** JSON request headers, with the key as a bearer token when given. */
export function headersFor(key) {
  return {
    "content-type": "application/json",
    "user-agent": HEADER_UA,
    ...(key ? { authorization: `Bearer ${key}` } : {}),
  };
}

/**
 * The load loop of a stored-rows measurement: `warmupSec` of unmeasured load,
 * then `durationSec` measured, and the rows of `table` stored meanwhile
 * (counted after the answers in flight when the load stopped). `between`
 * runs after the warm-up, just before the measured run (e.g. to reset a
 * sampler or start a CPU meter); what the `stop()` of its result returns,
 * called when the run ends, comes back as `measured`.
 */
export async function measureStored({
  load,
  dbPath,
  table,
  warmupSec,
  durationSec,
  between = () => {},
}) {
  if (warmupSec > 0) await cannon({ ...load, durationSec: warmupSec });
  // Answers of the warm-up still in flight are not counted in the run.
  await new Promise((r) => setTimeout(r, 300));
  const before = storedRows(dbPath, table);
  const after = between();
  const run = await cannon({ ...load, durationSec });
  const measured = after?.stop?.();
  await new Promise((r) => setTimeout(r, 300)); // answers in flight when autocannon stopped
  const stored = storedRows(dbPath, table) - before;
  return { run, stored, before, measured };
}
