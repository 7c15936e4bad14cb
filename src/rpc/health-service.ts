/**
 * grpc.health.v1.Health, the standard gRPC health service that Kubernetes
 * gRPC probes, Envoy and grpc-health-probe call. Every served service is
 * SERVING exactly when the process is ready (GET /readyz): one store behind
 * them all. No key is needed, as for /readyz.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type Health,
  HealthCheckResponse_ServingStatus as Status,
} from "../../gen/grpc/health/v1/health_pb.js";
import { errors } from "../domain/errors.js";
import type { Readiness } from "../lib/readiness.js";

export function createHealthService(deps: {
  readiness: Readiness;
  /** Fully-qualified names of the services whose health can be asked ("" is the whole server). */
  services: string[];
  /** How often a Watch re-checks the store while nothing else did (ms). */
  watchIntervalMs?: number;
}): ServiceImpl<typeof Health> {
  const known = new Set(["", ...deps.services]);
  const interval = deps.watchIntervalMs ?? 5_000;
  const statusOf = (ready: boolean) => (ready ? Status.SERVING : Status.NOT_SERVING);

  return {
    async check(req) {
      if (!known.has(req.service)) {
        throw errors.unknownService(req.service);
      }
      return { status: statusOf(await deps.readiness.check()) };
    },

    async *watch(req, ctx) {
      let wake: (() => void) | undefined;
      let pushed = false;
      const unsubscribe = deps.readiness.onChange(() => {
        pushed = true;
        wake?.();
      });
      const onAbort = () => wake?.();
      ctx.signal.addEventListener("abort", onAbort);
      try {
        if (!known.has(req.service)) {
          // The standard: say SERVICE_UNKNOWN and keep the call open.
          yield { status: Status.SERVICE_UNKNOWN };
          while (!ctx.signal.aborted && !deps.readiness.closing) {
            await new Promise<void>((resolve) => {
              wake = resolve;
            });
          }
          return;
        }
        let sent: Status | undefined;
        let ready = await deps.readiness.check();
        for (;;) {
          const status = statusOf(ready);
          if (status !== sent) {
            yield { status };
            sent = status;
          }
          // Shutdown ends the stream after NOT_SERVING, so it does not hold the server open.
          if (deps.readiness.closing || ctx.signal.aborted) return;
          pushed = false;
          let timer: NodeJS.Timeout | undefined;
          await new Promise<void>((resolve) => {
            wake = resolve;
            timer = setTimeout(resolve, interval);
          });
          clearTimeout(timer);
          wake = undefined;
          if (ctx.signal.aborted) return;
          // Another check (a probe, /readyz) just recorded the answer; otherwise ask the store.
          ready = pushed ? deps.readiness.last === true : await deps.readiness.check();
        }
      } finally {
        unsubscribe();
        ctx.signal.removeEventListener("abort", onAbort);
      }
    },
  };
}
