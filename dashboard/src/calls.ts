/**
 * The page's calls to Query and Funnel: each answer as a state (loading,
 * error, done), asked again whenever its request changes, and all of them
 * queued so that at most two run at once.
 */
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { useEffect, useState } from "preact/hooks";
import type { QueryResponse, ReportsService } from "../../gen/ingest/v1/reports_pb.js";
import { describeError, isAuthError } from "./api.js";
import type { queryRequest } from "./query.js";

type Reports = Client<typeof ReportsService>;

export type Answer<R = QueryResponse> =
  | { state: "loading" }
  | { state: "error"; message: string; auth: boolean }
  | { state: "done"; r: R };

/**
 * The service runs a few queries per site at once (ANALYTICS_QUERIES_PER_SITE,
 * 2 by default) and refuses more with resource_exhausted: the page sends at
 * most two at a time and retries a refused one after a short wait.
 */
const MAX_AT_ONCE = 2;
let running = 0;
const waiting: (() => void)[] = [];

export async function queued<T>(call: () => Promise<T>): Promise<T> {
  if (running >= MAX_AT_ONCE) await new Promise<void>((go) => waiting.push(go));
  running++;
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        if (attempt >= 5 || ConnectError.from(err).code !== Code.ResourceExhausted) throw err;
        await new Promise((r) => setTimeout(r, 250 * (attempt + 1)));
      }
    }
  } finally {
    running--;
    waiting.shift()?.();
  }
}

/** One Query call, again whenever its request changes. */
export function useQuery(
  client: Reports,
  request: ReturnType<typeof queryRequest> | undefined,
): Answer {
  return useCall(request, (r) => client.query(r));
}

/** One call (queued with the others), again whenever its request's JSON changes. */
export function useCall<Q, R>(request: Q | undefined, call: (request: Q) => Promise<R>): Answer<R> {
  const [answer, setAnswer] = useState<Answer<R>>({ state: "loading" });
  const key = JSON.stringify(request ?? null, (_k, v) => (typeof v === "bigint" ? String(v) : v));
  // The request's JSON is its identity: a new object with the same fields asks nothing again.
  useEffect(() => {
    if (request === undefined) return;
    let current = true;
    setAnswer({ state: "loading" });
    queued(() => call(request)).then(
      (r) => current && setAnswer({ state: "done", r }),
      (err: unknown) =>
        current &&
        setAnswer({ state: "error", message: describeError(err), auth: isAuthError(err) }),
    );
    return () => {
      current = false;
    };
  }, [key]);
  return answer;
}
