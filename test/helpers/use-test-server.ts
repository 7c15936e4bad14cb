/**
 * The one set-up of integration tests: a started service and a tenant on it.
 * `useTestServer()` registers the `beforeAll`/`afterAll` pair in the suite it
 * is called from (the file, or a `describe`) and returns a context that is
 * filled when `beforeAll` has run, so tests read `ctx.url`, `ctx.key`, ...
 * without each file copying `startTestServer` + `createTenant` + `close`.
 */
import type { DescService } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { afterAll, beforeAll } from "vitest";
import type { Clock } from "../../src/domain/clock.js";
import type { Store } from "../../src/store/port.js";
import { type Protocol, rpcClient } from "./rpc-clients.js";
import {
  ADMIN_TOKEN,
  createTenant,
  startTestServer,
  type Tenant,
  type TestServer,
  type TestServerOptions,
} from "./test-server.js";

/** What the fixture starts: the server's options, and the tenant it creates (`false`: none). */
export interface UseTestServerOptions extends TestServerOptions {
  tenant?: Parameters<typeof createTenant>[1] | false;
}

/** The started server and its tenant; every property throws if read before `beforeAll` ran. */
export interface TestServerContext {
  readonly server: TestServer;
  /** The tenant created at start (a Scale account unless `tenant.plan` says otherwise). */
  readonly tenant: Tenant;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly siteId: string;
  /** The tenant's key with both scopes. */
  readonly key: string;
  readonly store: Store;
  readonly clock: Clock;
  /** `{ authorization: "Bearer <admin token>" }`, for AdminService and ReportsService calls. */
  readonly adminHeaders: { authorization: string };
  /** A connect-es client of `service` on this server (Connect over HTTP/1.1 unless said). */
  client<S extends DescService>(service: S, protocol?: Protocol): Client<S>;
  /** Creates another key on the tenant's site with only `scopes`; returns the secret. */
  keyWith(scopes: string[]): Promise<string>;
}

/**
 * Starts a server (and a tenant) before the tests of the enclosing suite and
 * closes it after them. `options` may be a function, called in `beforeAll`,
 * for set-up that must itself wait (e.g. `{ store: await freshStore(kind) }`).
 */
export function useTestServer(
  options: UseTestServerOptions | (() => UseTestServerOptions | Promise<UseTestServerOptions>) = {},
): TestServerContext {
  let started: { server: TestServer; tenant?: Tenant } | undefined;
  const get = () => {
    if (!started) {
      throw new Error("useTestServer: the server starts in beforeAll; read it in a test or hook");
    }
    return started;
  };
  const tenant = () => {
    const t = get().tenant;
    if (!t) throw new Error("useTestServer: started with { tenant: false }");
    return t;
  };

  beforeAll(async () => {
    const { tenant: tenantOptions, ...serverOptions } =
      typeof options === "function" ? await options() : options;
    const server = await startTestServer(serverOptions);
    started = { server };
    if (tenantOptions !== false) started.tenant = await createTenant(server, tenantOptions);
  });
  afterAll(async () => {
    await started?.server.close();
    started = undefined;
  });

  return {
    get server() {
      return get().server;
    },
    get tenant() {
      return tenant();
    },
    get url() {
      return get().server.url;
    },
    get siteId() {
      return tenant().siteId;
    },
    get key() {
      return tenant().key;
    },
    get store() {
      return get().server.store;
    },
    get clock() {
      return get().server.clock;
    },
    adminHeaders: { authorization: `Bearer ${ADMIN_TOKEN}` },
    client: (service, protocol = "connect") => rpcClient(service, get().server.url, protocol),
    async keyWith(scopes) {
      const t = tenant();
      const { key } = await get().server.admin.createKey({
        siteId: t.siteId,
        name: `${scopes.join("+")} only`,
        scopes,
        actorUserId: t.ownerUserId,
      });
      return key;
    },
  };
}

/**
 * For the test that needs a server of its own (its settings differ from every
 * other test's): starts one and a tenant, runs `body`, and closes the server
 * whatever `body` does.
 */
export async function withTestServer<T>(
  options: TestServerOptions & { tenant?: Parameters<typeof createTenant>[1] },
  body: (server: TestServer, tenant: Tenant) => Promise<T>,
): Promise<T> {
  const { tenant: tenantOptions, ...serverOptions } = options;
  const server = await startTestServer(serverOptions);
  try {
    return await body(server, await createTenant(server, tenantOptions));
  } finally {
    await server.close();
  }
}
