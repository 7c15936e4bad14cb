import {
  Code,
  ConnectError,
  createClient,
  createRouterTransport,
  type HandlerContext,
} from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  Health,
  HealthCheckResponse_ServingStatus,
} from "../../../gen/grpc/health/v1/health_pb.js";
import { AdminService } from "../../../gen/ingest/v1/admin_pb.js";
import { ReportsService } from "../../../gen/ingest/v1/reports_pb.js";
import { adminPrincipalKey, createAdminAuthInterceptor } from "../../../src/rpc/admin-auth.js";
import { createErrorInterceptor } from "../../../src/rpc/connect-errors.js";

const TOKEN = "admin-token-for-tests";

/** A router with the interceptors as the RPC door orders them; handlers note the principal they see. */
function clients(adminToken: string | undefined) {
  const seen: unknown[] = [];
  const note = (ctx: HandlerContext) => seen.push(ctx.values.get(adminPrincipalKey));
  const transport = createRouterTransport(
    (router) => {
      router.service(AdminService, {
        async getUsage(_req, ctx) {
          note(ctx);
          return { accountId: "acc_1" };
        },
      });
      router.service(Health, {
        async check(_req, ctx) {
          note(ctx);
          return { status: HealthCheckResponse_ServingStatus.SERVING };
        },
      });
    },
    {
      router: {
        interceptors: [
          createErrorInterceptor(() => {}),
          createAdminAuthInterceptor(adminToken, [AdminService, ReportsService]),
        ],
      },
    },
  );
  return {
    seen,
    admin: createClient(AdminService, transport),
    health: createClient(Health, transport),
  };
}

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

describe("the ADMIN_TOKEN interceptor", () => {
  it("puts the admin principal in the context of an authenticated call", async () => {
    const { admin, seen } = clients(TOKEN);
    await expect(admin.getUsage({ accountId: "acc_1" }, bearer(TOKEN))).resolves.toMatchObject({
      accountId: "acc_1",
    });
    expect(seen).toEqual([{ kind: "admin_token" }]);
  });

  it("refuses a wrong or missing token before the handler runs", async () => {
    const { admin, seen } = clients(TOKEN);
    for (const options of [bearer("wrong"), {}]) {
      const err = await admin.getUsage({ accountId: "acc_1" }, options).catch((e) => e);
      expect(err).toBeInstanceOf(ConnectError);
      expect([err.code, err.rawMessage]).toEqual([
        Code.Unauthenticated,
        "missing or invalid admin token",
      ]);
    }
    expect(seen).toEqual([]);
  });

  it("refuses every call while ADMIN_TOKEN is unset", async () => {
    const { admin, seen } = clients(undefined);
    const err = await admin.getUsage({ accountId: "acc_1" }, bearer(TOKEN)).catch((e) => e);
    expect([err.code, err.rawMessage]).toEqual([
      Code.Unauthenticated,
      "admin API is disabled: ADMIN_TOKEN is not set",
    ]);
    expect(seen).toEqual([]);
  });

  it("lets calls to other services through without a principal", async () => {
    const { health, seen } = clients(undefined);
    await expect(health.check({})).resolves.toMatchObject({
      status: HealthCheckResponse_ServingStatus.SERVING,
    });
    expect(seen).toEqual([undefined]);
  });
});
