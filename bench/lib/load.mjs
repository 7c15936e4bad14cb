/**
 * Load generators: autocannon (closed loop, HTTP/1.1), an open-loop paced
 * HTTP client for latency at a fixed rate, and two closed-loop gRPC clients
 * over HTTP/2 (pre-encoded frames on node:http2, or connect-node).
 */
import http from "node:http";
import { performance } from "node:perf_hooks";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import autocannon from "autocannon";

/** Percentile (0-100) of an unsorted array of numbers, nearest rank. */
export function percentile(values, p) {
  if (values.length === 0) return null;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

function statusCounts(stats) {
  const out = {};
  for (const [code, v] of Object.entries(stats ?? {})) out[code] = v.count;
  return out;
}

/**
 * Closed-loop HTTP/1.1 load with autocannon: `connections` keep-alive
 * connections, each sending the next request as soon as the previous one is
 * answered (`overallRate` caps the total per second, autocannon-style).
 * `bodyOf(i)` gives the body of the i-th request, whichever connection sends it.
 */
export async function cannon({
  url,
  path,
  headers,
  bodyOf,
  connections,
  durationSec,
  overallRate,
}) {
  // One request rebuilt each time with the next body: every connection sends
  // different bodies (a list of requests would be built per connection up
  // front, which is slow for big pools).
  let next = 0;
  const requests = [
    {
      method: "POST",
      path,
      headers,
      body: bodyOf(0),
      setupRequest: (req) => ({ ...req, body: bodyOf(next++) }),
    },
  ];
  const result = await autocannon({
    url,
    connections,
    pipelining: 1,
    duration: durationSec,
    requests,
    timeout: 30,
    ...(overallRate ? { overallRate: Math.max(1, Math.round(overallRate)) } : {}),
  });
  const elapsed = (new Date(result.finish) - new Date(result.start)) / 1000;
  const ok = result["2xx"];
  return {
    tool: "autocannon",
    durationSec: elapsed,
    connections,
    overallRate: overallRate ? Math.round(overallRate) : undefined,
    ok,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: statusCounts(result.statusCodeStats),
    okPerSec: ok / elapsed,
    latencyMs: {
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
      mean: result.latency.mean,
    },
  };
}

/**
 * Open-loop load at a fixed rate: request i is due at start + i/rate and sent
 * then whether or not earlier ones were answered, over at most `maxSockets`
 * keep-alive connections (like autocannon's; past that requests wait in the
 * client). Latency counts from the due time, so waiting behind a stalled
 * server counts too (no coordinated omission). Requests due in the first
 * `warmupSec` open the connections and are not counted. `bodyOf(i)` gives
 * the i-th body.
 */
export async function paced({
  url,
  path,
  headers,
  bodyOf,
  rate,
  durationSec,
  maxSockets = 64,
  warmupSec = 1,
}) {
  const { hostname, port } = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const latencies = [];
  const statusCodes = {};
  let sent = 0;
  let errors = 0;
  let inflight = 0;
  let ok = 0;
  const interval = 1000 / rate;
  const t0 = performance.now();
  // The first `warmupSec` open the connections and are not counted.
  const counted = t0 + warmupSec * 1000;
  const end = counted + durationSec * 1000;
  await new Promise((resolve) => {
    let done = false;
    const settle = () => {
      inflight--;
      if (done && inflight === 0) resolve();
    };
    const fire = (due, i) => {
      inflight++;
      const body = bodyOf(i);
      const req = http.request(
        {
          agent,
          host: hostname,
          port,
          method: "POST",
          path,
          headers: { ...headers, "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on("end", () => {
            if (due >= counted) {
              const code = res.statusCode;
              statusCodes[code] = (statusCodes[code] ?? 0) + 1;
              if (code >= 200 && code < 300) {
                ok++;
                latencies.push(performance.now() - due);
              }
            }
            settle();
          });
        },
      );
      req.on("error", () => {
        if (due >= counted) errors++;
        settle();
      });
      req.end(body);
    };
    const tick = () => {
      const now = Math.min(performance.now(), end);
      while (t0 + sent * interval <= now) {
        fire(t0 + sent * interval, sent);
        sent++;
      }
      if (performance.now() >= end) {
        clearInterval(timer);
        done = true;
        if (inflight === 0) resolve();
      }
    };
    const timer = setInterval(tick, 1);
  });
  agent.destroy();
  const elapsed = durationSec;
  const sentCounted = sent - Math.ceil((warmupSec * 1000) / interval);
  return {
    tool: "paced",
    durationSec: elapsed,
    targetRate: Math.round(rate),
    maxSockets,
    sent: sentCounted,
    ok,
    non2xx: sentCounted - ok - errors,
    errors,
    statusCodes,
    okPerSec: ok / elapsed,
    latencyMs: {
      p50: percentile(latencies, 50),
      p90: percentile(latencies, 90),
      p99: percentile(latencies, 99),
      max: percentile(latencies, 100),
    },
  };
}

/**
 * Closed-loop gRPC (HTTP/2, one connection, connect-node): `concurrency`
 * calls in flight, each starting the next when answered.
 */
export async function grpcConnectLoad({
  url,
  service,
  method,
  schema,
  messages,
  apiKey,
  concurrency,
  connections = 1,
  durationSec,
}) {
  // One HTTP/2 connection per transport; calls are spread over them.
  const clients = Array.from({ length: connections }, () =>
    createClient(service, createGrpcTransport({ baseUrl: url })),
  );
  const msgs = messages.map((m) => create(schema, m));
  const headers = { authorization: `Bearer ${apiKey}` };
  const latencies = [];
  const errorCodes = {};
  let ok = 0;
  let accepted = 0;
  let n = 0;
  const t0 = performance.now();
  const end = t0 + durationSec * 1000;
  const loop = async (_, i) => {
    const client = clients[i % clients.length];
    while (performance.now() < end) {
      const msg = msgs[n++ % msgs.length];
      const start = performance.now();
      try {
        const res = await client[method](msg, { headers, timeoutMs: 30_000 });
        latencies.push(performance.now() - start);
        ok++;
        accepted += res.accepted ?? 0;
      } catch (err) {
        const code = err?.code ?? "unknown";
        errorCodes[code] = (errorCodes[code] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsed = (performance.now() - t0) / 1000;
  return grpcResult("connect-node grpc", {
    elapsed,
    concurrency,
    connections,
    ok,
    accepted,
    errorCodes,
    latencies,
  });
}

/** What a closed-loop gRPC run reports, whichever client ran it. */
function grpcResult(
  tool,
  { elapsed, concurrency, connections, ok, accepted, errorCodes, latencies },
) {
  return {
    tool,
    durationSec: elapsed,
    concurrency,
    connections,
    ok,
    acceptedEvents: accepted,
    non2xx: Object.values(errorCodes).reduce((a, b) => a + b, 0),
    errorCodes,
    okPerSec: ok / elapsed,
    latencyMs: {
      p50: percentile(latencies, 50),
      p90: percentile(latencies, 90),
      p99: percentile(latencies, 99),
      max: percentile(latencies, 100),
    },
  };
}

/**
 * Closed-loop gRPC load over raw HTTP/2 with pre-encoded, pre-framed request
 * bodies (what autocannon does for HTTP/1.1): the client spends almost nothing
 * per call, so the server's cost is what is measured. Answers are read only
 * for their `grpc-status` trailer and the `accepted` field is not decoded:
 * `acceptedEvents` is the calls' `eventsPerCall` on status 0.
 */
export async function grpcRawLoad({
  url,
  path,
  frames,
  eventsPerCall,
  apiKey,
  concurrency,
  connections = 1,
  durationSec,
}) {
  const { connect, constants } = await import("node:http2");
  const sessions = Array.from({ length: connections }, () => connect(url));
  const headers = {
    [constants.HTTP2_HEADER_METHOD]: "POST",
    [constants.HTTP2_HEADER_PATH]: path,
    "content-type": "application/grpc+proto",
    te: "trailers",
    authorization: `Bearer ${apiKey}`,
  };
  const latencies = [];
  const errorCodes = {};
  let ok = 0;
  let n = 0;
  const t0 = performance.now();
  const end = t0 + durationSec * 1000;
  const call = (session, body) =>
    new Promise((resolve) => {
      const stream = session.request(headers);
      let status;
      stream.on("response", (h) => {
        if (h["grpc-status"] !== undefined) status = h["grpc-status"];
      });
      stream.on("trailers", (t) => {
        status = t["grpc-status"];
      });
      stream.on("data", () => {});
      stream.on("close", () => resolve(status ?? "closed"));
      stream.on("error", () => {});
      stream.end(body);
    });
  const loop = async (_, i) => {
    const session = sessions[i % sessions.length];
    while (performance.now() < end) {
      const body = frames[n++ % frames.length];
      const start = performance.now();
      const status = await call(session, body);
      if (status === "0") {
        latencies.push(performance.now() - start);
        ok++;
      } else errorCodes[status] = (errorCodes[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsed = (performance.now() - t0) / 1000;
  for (const s of sessions) s.close();
  const accepted = ok * eventsPerCall;
  return grpcResult("raw HTTP/2 grpc", {
    elapsed,
    concurrency,
    connections,
    ok,
    accepted,
    errorCodes,
    latencies,
  });
}

/** A gRPC length-prefixed message frame (flag 0, big-endian length, bytes). */
export function grpcFrame(bytes) {
  const out = Buffer.alloc(5 + bytes.length);
  out.writeUInt32BE(bytes.length, 1);
  out.set(bytes, 5);
  return out;
}
