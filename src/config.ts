/** Configuration from environment variables. */

/** A setting that cannot be used; start-up stops with its one-line message. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

export interface Config {
  host: string;
  port: number;
  storeUrl: string;
  /** Unset disables AdminService and ReportsService. */
  adminToken: string | undefined;
  logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
  /**
   * Fastify's trustProxy: false (default: X-Forwarded-For is ignored), true,
   * a hop count, or a comma-separated list of addresses/CIDRs (and `loopback`).
   */
  trustProxy: boolean | number | string;
  ingestQueueCapacity: number;
  ingestBatchMax: number;
  ingestFlushMs: number;
  /** SQLite: group-commit batches written at once (MongoDB always writes one at a time). */
  ingestBatchesInFlight: number;
  /** A GeoLite2/GeoIP2 country or city MMDB file; the bundled DB-IP file otherwise. */
  geoipDb: string | undefined;
  /** How long shutdown waits for in-flight requests. */
  shutdownTimeoutMs: number;
  /** MongoDB: the time limit of one operation, given to the driver and the server (503 past it). */
  storeTimeoutMs: number;
  /** How long SQLite waits for another process's write lock before a write fails with 503. */
  sqliteBusyTimeoutMs: number;
  /** Server processes sharing the port (node:cluster); 1 runs no cluster. */
  workers: number;
  /** Serves gRPC server reflection (v1 and v1alpha); GRPC_REFLECTION=false turns it off. */
  grpcReflection: boolean;
  /** Address of the Prometheus metrics listener. */
  metricsHost: string;
  /** Port of the metrics listener; undefined (METRICS_PORT unset) serves no metrics. */
  metricsPort: number | undefined;
  /** Requests per minute one client address may send to the public collect endpoint; 0: no limit. */
  collectRateLimit: number;
  /** Open TCP connections per process; more are closed at once. */
  maxConnections: number;
  /** Time for a connection's first bytes and for a request's headers. */
  headersTimeoutMs: number;
  /** Time for a whole request (headers and body) to arrive. */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection or HTTP/2 session stays open. */
  idleTimeoutMs: number;
  /** Streams one HTTP/2 connection may have open at once. */
  http2MaxStreams: number;
  /** Time between two passes of the retention pruner; 0 runs no pruner in this process. */
  retentionIntervalMs: number;
  /** Most events one pruning step removes (one short store transaction). */
  retentionStepEvents: number;
  /** Least pause between two pruning steps. */
  retentionStepPauseMs: number;
  /** Exports (REST and RPC) of one site that may run at once in a process; more get 429. */
  exportsPerSite: number;
  /** DuckDB worker threads of the analytics store (docs/operations.md). */
  analyticsThreads: number;
  /** DuckDB's memory limit for the analytics store (default `384MB`: under 1 GiB at 10M events). */
  analyticsMemoryLimit: string;
  /** Time between two polls of the analytics feed (SQLite → DuckDB). */
  analyticsFeedIntervalMs: number;
  /**
   * Free pages SQLite keeps for the next events; the feed gives the rest back
   * to the file system after it deletes what it moved (docs/operations.md).
   */
  sqliteFreePagesKept: number;
  /** A Query or Funnel past this is cancelled. */
  analyticsQueryTimeoutMs: number;
  /** Queries of one site running at once; more answer 429. */
  analyticsQueriesPerSite: number;
  /**
   * The longest a fixed report's plan waits for one of its site's report
   * lanes (as many as analyticsQueriesPerSite) before it answers 429.
   */
  analyticsReportWaitMs: number;
  /**
   * ANALYTICS_PATH: the analytics store's DuckDB file of a MongoDB deployment
   * (`./data/analytics.duckdb` when unset). With SQLite the file is always
   * `analytics.duckdb` beside the SQLite file (a restore removes it there).
   */
  analyticsPath: string | undefined;
  /**
   * ANALYTICS_OWNER: whether this process may own the analytics store (its
   * file, feed and engine). Unset or true: yes; the servers of one
   * deployment (a SQLite data directory, a MongoDB database) choose one
   * owner by a lease, ANALYTICS_LEASE_MS. false: never (a process that only
   * ingests; docs/mongodb.md).
   */
  analyticsOwner: boolean | undefined;
  /**
   * ANALYTICS_LEASE_MS: how long the owner's lease on the deployment's
   * analytics file (SQLite's data directory, MongoDB's database) lasts after
   * each renewal (it renews every third of it); another server takes over
   * that long after the owner died.
   */
  analyticsLeaseMs: number;
  /**
   * ANALYTICS_COMPACT_INTERVAL_MS: the longest time the analytics file keeps
   * the bytes of rows an erasure or a pruning removed before the running
   * owner rewrites it (at most 24 h, issue 30; docs/operations.md).
   */
  analyticsCompactIntervalMs: number;
}

type Env = Record<string, string | undefined>;

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (raw === "true") return true;
  if (raw === "false") return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

/** ANALYTICS_MEMORY_LIMIT: a number and a unit DuckDB reads (KB, MB, GB, …). */
function memoryLimit(raw: string | undefined): string {
  const value = raw || "384MB";
  if (!/^[0-9]+(\.[0-9]+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.test(value)) {
    throw new Error(
      `ANALYTICS_MEMORY_LIMIT must be a size such as 512MB or 2GB, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

function trustProxy(raw: string | undefined): Config["trustProxy"] {
  if (raw === undefined || raw === "" || raw === "false") return false;
  if (raw === "true") return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  const parts = raw.split(",").map((p) => p.trim());
  const ok = parts.every((p) => /^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(p) || p === "loopback");
  if (!ok) {
    throw new ConfigError(
      `TRUST_PROXY must be false, true, a hop count or a comma-separated list of addresses/CIDRs, got "${raw}"`,
    );
  }
  return parts.join(",");
}

/** Reads the configuration; throws ConfigError naming the first invalid setting. */
export function loadConfig(env: Env = process.env): Config {
  const host = env.HOST || "127.0.0.1";
  const storeUrl = env.STORE_URL || "sqlite:./data/ingest.sqlite";
  if (!/^(sqlite:.+|mongodb(\+srv)?:\/\/.+)$/.test(storeUrl)) {
    throw new ConfigError(
      "STORE_URL must be sqlite:<path> or mongodb://… / mongodb+srv://…, got an unsupported value",
    );
  }
  const logLevel = (env.LOG_LEVEL || "info") as Config["logLevel"];
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${logLevel}"`);
  }
  const adminToken = env.ADMIN_TOKEN || undefined;
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new ConfigError("ADMIN_TOKEN must be at least 16 characters");
  }
  const ingestBatchMax = int(env, "INGEST_BATCH_MAX", 512, 1, 100_000);
  const headersTimeoutMs = int(env, "HEADERS_TIMEOUT_MS", 10_000, 100, 600_000);
  const requestTimeoutMs = int(env, "REQUEST_TIMEOUT_MS", 20_000, 100, 600_000);
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(
      `HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not exceed REQUEST_TIMEOUT_MS (${requestTimeoutMs})`,
    );
  }
  return {
    host,
    port: int(env, "PORT", 8080, 0, 65535),
    storeUrl,
    adminToken,
    logLevel,
    trustProxy: trustProxy(env.TRUST_PROXY),
    ingestQueueCapacity: int(env, "INGEST_QUEUE_CAPACITY", 10_000, 1, 10_000_000),
    ingestBatchMax,
    ingestFlushMs: int(env, "INGEST_FLUSH_MS", 2, 0, 10_000),
    ingestBatchesInFlight: int(env, "INGEST_BATCHES_IN_FLIGHT", 4, 1, 64),
    geoipDb: env.GEOIP_DB || undefined,
    shutdownTimeoutMs: int(env, "SHUTDOWN_TIMEOUT_MS", 10_000, 0, 600_000),
    storeTimeoutMs: int(env, "STORE_TIMEOUT_MS", 5_000, 10, 600_000),
    sqliteBusyTimeoutMs: int(env, "SQLITE_BUSY_TIMEOUT_MS", 2_000, 0, 600_000),
    workers: int(env, "WORKERS", 1, 1, 64),
    grpcReflection: bool(env, "GRPC_REFLECTION", true),
    metricsHost: env.METRICS_HOST || "127.0.0.1",
    metricsPort: env.METRICS_PORT ? int(env, "METRICS_PORT", 0, 0, 65535) : undefined,
    collectRateLimit: int(env, "COLLECT_RATE_LIMIT", 600, 0, 1_000_000_000),
    maxConnections: int(env, "MAX_CONNECTIONS", 10_000, 1, 1_000_000),
    headersTimeoutMs,
    requestTimeoutMs,
    idleTimeoutMs: int(env, "IDLE_TIMEOUT_MS", 65_000, 100, 3_600_000),
    http2MaxStreams: int(env, "HTTP2_MAX_STREAMS", 100, 1, 10_000),
    retentionIntervalMs: int(env, "RETENTION_INTERVAL_MS", 600_000, 0, 86_400_000),
    retentionStepEvents: int(env, "RETENTION_STEP_EVENTS", 500, 1, 10_000),
    retentionStepPauseMs: int(env, "RETENTION_STEP_PAUSE_MS", 10, 0, 60_000),
    exportsPerSite: int(env, "EXPORTS_PER_SITE", 2, 1, 100),
    analyticsThreads: int(env, "ANALYTICS_THREADS", 2, 1, 64),
    analyticsMemoryLimit: memoryLimit(env.ANALYTICS_MEMORY_LIMIT),
    analyticsFeedIntervalMs: int(env, "ANALYTICS_FEED_INTERVAL_MS", 250, 10, 60_000),
    sqliteFreePagesKept: int(env, "SQLITE_FREE_PAGES_KEPT", 256, 0, 1_000_000_000),
    analyticsQueryTimeoutMs: int(env, "ANALYTICS_QUERY_TIMEOUT_MS", 10_000, 100, 600_000),
    analyticsQueriesPerSite: int(env, "ANALYTICS_QUERIES_PER_SITE", 2, 1, 64),
    analyticsReportWaitMs: int(env, "ANALYTICS_REPORT_WAIT_MS", 10_000, 0, 600_000),
    analyticsPath: env.ANALYTICS_PATH || undefined,
    analyticsOwner:
      env.ANALYTICS_OWNER === undefined || env.ANALYTICS_OWNER === ""
        ? undefined
        : bool(env, "ANALYTICS_OWNER", false),
    analyticsLeaseMs: int(env, "ANALYTICS_LEASE_MS", 15_000, 300, 600_000),
    analyticsCompactIntervalMs: int(
      env,
      "ANALYTICS_COMPACT_INTERVAL_MS",
      3_600_000,
      100,
      86_400_000,
    ),
  };
}
