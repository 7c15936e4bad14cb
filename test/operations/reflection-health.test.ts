/**
 * gRPC server reflection and the standard health service, through the tools
 * that use them: `buf curl` without `--schema` (over gRPC and Connect) and a
 * connect-es client for Health.Watch.
 */
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import {
  Health,
  HealthCheckResponse_ServingStatus as Status,
} from "../../gen/grpc/health/v1/health_pb.js";
import type { Store } from "../../src/store/port.js";
import { validPayment } from "../helpers/fixtures.js";
import { runBuf } from "../helpers/rpc-clients.js";
import { useTestServer } from "../helpers/use-test-server.js";

const SERVICES = [
  "grpc.health.v1.Health",
  "grpc.reflection.v1.ServerReflection",
  "grpc.reflection.v1alpha.ServerReflection",
  "ingest.v1.AdminService",
  "ingest.v1.EventsService",
  "ingest.v1.PaymentsService",
  "ingest.v1.ReportsService",
];

/** buf curl's flags for a protocol: Connect is asked over h2c too, as it is bidirectional. */
const TRANSPORTS = {
  grpc: ["--protocol", "grpc", "--http2-prior-knowledge"],
  connect: ["--protocol", "connect", "--http2-prior-knowledge"],
} as const;

/** A store whose ping fails while `down.value` is true. */
function breakablePing(down: { value: boolean }) {
  return (store: Store): Store =>
    new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === "ping") {
          return () => (down.value ? Promise.reject(new Error("down")) : target.ping());
        }
        const v = Reflect.get(target, prop, receiver);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
}

describe("gRPC reflection and health", () => {
  const down = { value: false };

  const ctx = useTestServer({ wrapStore: breakablePing(down) });

  for (const [name, flags] of Object.entries(TRANSPORTS)) {
    it(`buf curl --list-services and --list-methods over ${name} without --schema`, async () => {
      const services = await runBuf(["curl", ...flags, "--list-services", ctx.url]);
      expect(services.stderr).toBe("");
      expect(services.exitCode).toBe(0);
      expect(services.stdout.trim().split("\n")).toEqual(SERVICES);

      const methods = await runBuf(["curl", ...flags, "--list-methods", ctx.url]);
      expect(methods.exitCode).toBe(0);
      const listed = methods.stdout.trim().split("\n");
      expect(listed).toContain("ingest.v1.PaymentsService/RecordPayment");
      expect(listed).toContain("ingest.v1.EventsService/RecordEvents");
      expect(listed).toContain("grpc.health.v1.Health/Watch");
      expect(listed).toContain("ingest.v1.AdminService/CreateConnector");
      expect(listed).toContain("ingest.v1.ReportsService/SiteOverview");
      expect(listed).toContain("ingest.v1.ReportsService/CustomerJourney");
      expect(listed).toContain("ingest.v1.ReportsService/GetAccess");
      expect(listed).toContain("ingest.v1.ReportsService/ExportEvents");
      expect(listed).toContain("ingest.v1.ReportsService/ExportPayments");
      expect(listed).toContain("ingest.v1.AdminService/SetSiteRetention");
      expect(listed).toContain("ingest.v1.AdminService/SetSiteCollectLimit");
      expect(listed).toHaveLength(35);
    });

    it(`buf curl records a payment over ${name} with the schema from reflection`, async () => {
      const id = `pay_reflect_${name}`;
      const res = await runBuf([
        "curl",
        ...flags,
        "-H",
        `Authorization: Bearer ${ctx.key}`,
        "-d",
        JSON.stringify(validPayment(id)),
        `${ctx.url}/ingest.v1.PaymentsService/RecordPayment`,
      ]);
      expect(res.stderr).toBe("");
      expect(res.exitCode).toBe(0);
      expect(JSON.parse(res.stdout)).toEqual({ paymentId: id });
      const stored = await ctx.store.getPayment(ctx.siteId, id);
      expect(stored).toMatchObject({ amountMinor: 2999, currency: "USD", customerId: "cus_1" });
    });

    it(`buf curl calls Health/Check over ${name} without --schema`, async () => {
      const check = (service: string) =>
        runBuf([
          "curl",
          ...flags,
          "-d",
          JSON.stringify({ service }),
          `${ctx.url}/grpc.health.v1.Health/Check`,
        ]);
      const all = await check("");
      expect(all.exitCode).toBe(0);
      expect(JSON.parse(all.stdout)).toEqual({ status: "SERVING" });
      const one = await check("ingest.v1.EventsService");
      expect(JSON.parse(one.stdout)).toEqual({ status: "SERVING" });

      const unknown = await check("nope.v1.Nothing");
      expect(unknown.exitCode).not.toBe(0);
      expect(JSON.parse(unknown.stderr)).toMatchObject({
        code: "not_found",
        message: "unknown service nope.v1.Nothing",
      });

      down.value = true;
      try {
        const sick = await check("");
        expect(sick.exitCode).toBe(0);
        expect(JSON.parse(sick.stdout)).toEqual({ status: "NOT_SERVING" });
      } finally {
        down.value = false;
      }
    });
  }

  it("answers older tools on grpc.reflection.v1alpha", async () => {
    const res = await runBuf([
      "curl",
      ...TRANSPORTS.grpc,
      "--reflect-protocol",
      "grpc-v1alpha",
      "--list-services",
      ctx.url,
    ]);
    expect(res.exitCode).toBe(0);
    expect(res.stdout.trim().split("\n")).toEqual(SERVICES);
  });

  it("Health/Watch sends the status, then each change, and ends at shutdown", async () => {
    const client = createClient(Health, createGrpcTransport({ baseUrl: ctx.url }));
    const stream = client.watch({ service: "" })[Symbol.asyncIterator]();
    const next = async () => (await stream.next()).value?.status;
    expect(await next()).toBe(Status.SERVING);

    // A probe that sees the store down (here: /readyz) reaches every watcher at once.
    down.value = true;
    try {
      expect((await fetch(`${ctx.url}/readyz`)).status).toBe(503);
      expect(await next()).toBe(Status.NOT_SERVING);
    } finally {
      down.value = false;
    }
    expect((await fetch(`${ctx.url}/readyz`)).status).toBe(200);
    expect(await next()).toBe(Status.SERVING);

    const unknown = client.watch({ service: "nope.v1.Nothing" })[Symbol.asyncIterator]();
    expect((await unknown.next()).value?.status).toBe(Status.SERVICE_UNKNOWN);

    const closed = ctx.server.close();
    expect(await next()).toBe(Status.NOT_SERVING);
    expect((await stream.next()).done).toBe(true);
    expect((await unknown.next()).done).toBe(true);
    await closed;
  });
});

describe("GRPC_REFLECTION=false", () => {
  const ctx = useTestServer({ env: { GRPC_REFLECTION: "false" }, tenant: false });

  it("serves no reflection, and health still answers", async () => {
    const res = await runBuf(["curl", ...TRANSPORTS.grpc, "--list-services", ctx.url]);
    expect(res.exitCode).not.toBe(0);
    expect(res.stderr).toContain("unimplemented");

    const check = await runBuf([
      "curl",
      ...TRANSPORTS.grpc,
      "--schema",
      ".",
      "-d",
      "{}",
      `${ctx.url}/grpc.health.v1.Health/Check`,
    ]);
    expect(check.exitCode).toBe(0);
    expect(JSON.parse(check.stdout)).toEqual({ status: "SERVING" });
  });
});
