/**
 * The metrics listener: `GET /metrics` in the Prometheus text format on its
 * own address (METRICS_HOST:METRICS_PORT), apart from the API port so it is
 * never exposed with it. With WORKERS=N the cluster primary serves it and
 * merges every worker's registry, fetched over the cluster IPC channel: one
 * scrape sees the whole server.
 */

import cluster, { type Worker } from "node:cluster";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { AggregatorRegistry, Registry } from "prom-client";

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

type Source = { contentType: string; collect(): Promise<string> };

/** Serves `source` at GET /metrics on host:port (0 picks a free port). */
export async function startMetricsServer(
  source: Source,
  host: string,
  port: number,
): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = req.url?.split("?")[0];
    if (path !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")) {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("not found\n");
      return;
    }
    source.collect().then(
      (body) => {
        res.writeHead(200, { "content-type": source.contentType });
        res.end(req.method === "HEAD" ? undefined : body);
      },
      () => {
        // No worker answered in time (e.g. all restarting): say so, Prometheus retries.
        res.writeHead(503, { "content-type": "text/plain; charset=utf-8" });
        res.end("metrics unavailable\n");
      },
    );
  });
  // A scrape must not keep a stopping process alive.
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** One process's registry as a source. */
export function registrySource(registry: Registry): Source {
  return { contentType: registry.contentType, collect: () => registry.metrics() };
}

const READY = "ingest:metrics-ready";
const REQUEST = "ingest:metrics-request";
const RESPONSE = "ingest:metrics-response";

/** How long a scrape waits for the workers' answers. */
const WORKER_TIMEOUT_MS = 5_000;

type MetricsJson = Awaited<ReturnType<Registry["getMetricsAsJSON"]>>;

/**
 * In the cluster primary: every worker's metrics, merged with prom-client's
 * AggregatorRegistry.aggregate (counters and histograms summed; gauges by
 * their `aggregator`). Only workers that said they report are asked, and
 * a scrape waits for them at most 5 s, so a worker that is starting or
 * restarting costs its own numbers, not the whole scrape.
 */
export function clusterSource(): Source {
  const ready = new Set<number>();
  const waiting = new Map<number, (metrics: MetricsJson) => void>();
  let nextId = 0;
  cluster.on(
    "message",
    (worker, message: { type?: string; id?: number; metrics?: MetricsJson }) => {
      if (message?.type === READY) ready.add(worker.id);
      if (message?.type === RESPONSE && message.id !== undefined && message.metrics) {
        waiting.get(message.id)?.(message.metrics);
      }
    },
  );
  cluster.on("exit", (worker) => ready.delete(worker.id));

  const ask = (worker: Worker) =>
    new Promise<MetricsJson | undefined>((resolve) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        resolve(undefined);
      }, WORKER_TIMEOUT_MS);
      waiting.set(id, (metrics) => {
        clearTimeout(timer);
        waiting.delete(id);
        resolve(metrics);
      });
      worker.send({ type: REQUEST, id });
    });

  return {
    contentType: Registry.PROMETHEUS_CONTENT_TYPE,
    async collect() {
      const workers = Object.values(cluster.workers ?? {}).filter(
        (w): w is Worker => w !== undefined && ready.has(w.id) && w.isConnected(),
      );
      const answers = (await Promise.all(workers.map(ask))).filter((m) => m !== undefined);
      if (answers.length === 0) throw new Error("no worker answered");
      return AggregatorRegistry.aggregate(answers).metrics();
    },
  };
}

/** In a cluster worker: answer the primary's scrapes with this registry. */
export function reportToPrimary(registry: Registry): void {
  if (!cluster.isWorker || !process.send) return;
  process.on("message", (message: { type?: string; id?: number }) => {
    if (message?.type !== REQUEST) return;
    registry.getMetricsAsJSON().then(
      (metrics) => process.send?.({ type: RESPONSE, id: message.id, metrics }),
      () => {}, // no answer: the primary's timeout leaves this worker out of the scrape
    );
  });
  process.send({ type: READY });
}
