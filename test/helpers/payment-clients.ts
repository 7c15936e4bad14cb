/** Real clients for the payments integration tests: REST (fetch), Connect, gRPC, and GetPayment. */
import { join } from "node:path";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import Database from "better-sqlite3";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { PaymentsService, RecordPaymentRequestSchema } from "../../gen/ingest/v1/payments_pb.js";
import { ReportsService, type StoredPayment } from "../../gen/ingest/v1/reports_pb.js";
import { ADMIN_TOKEN, postJson, type TestServer } from "./test-server.js";

/** POST /api/v1/payments. */
export function postPayment(server: TestServer, body: unknown, key: string) {
  return postJson(`${server.url}/api/v1/payments`, body, { key });
}

export function connectTransport(server: TestServer): Transport {
  return createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" });
}

export function grpcTransport(server: TestServer): Transport {
  return createGrpcTransport({ baseUrl: server.url });
}

/** What an RPC failure looked like: the code, the bare message and the ErrorInfo reason. */
export interface RpcFailure {
  code: Code;
  message: string;
  reason: string | undefined;
  httpStatus: string | undefined;
}

/** Calls RecordPayment with a body written as the REST JSON (snake_case, proto JSON rules). */
export async function rpcRecordPayment(
  transport: Transport,
  body: Record<string, unknown>,
  key: string,
): Promise<{ ok: true; paymentId: string } | ({ ok: false } & RpcFailure)> {
  const client = createClient(PaymentsService, transport);
  const req = fromJson(RecordPaymentRequestSchema, body as JsonValue);
  try {
    const res = await client.recordPayment(req, { headers: { authorization: `Bearer ${key}` } });
    return { ok: true, paymentId: res.paymentId };
  } catch (err) {
    const ce = ConnectError.from(err);
    const info = ce.findDetails(ErrorInfoSchema)[0];
    return {
      ok: false,
      code: ce.code,
      message: ce.rawMessage,
      reason: info?.reason,
      httpStatus: info?.metadata.http_status,
    };
  }
}

/** ReportsService.GetPayment with the admin token; undefined when not found. */
export async function getPayment(
  server: TestServer,
  siteId: string,
  paymentId: string,
): Promise<StoredPayment | undefined> {
  const client = createClient(ReportsService, connectTransport(server));
  try {
    const res = await client.getPayment(
      { siteId, paymentId },
      { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
    );
    return res.payment;
  } catch (err) {
    if (ConnectError.from(err).code === Code.NotFound) return undefined;
    throw err;
  }
}

/** How many payment rows the SQLite file holds for (site, payment id), read beside the server. */
export function countPaymentRows(server: TestServer, siteId: string, paymentId: string): number {
  const db = new Database(join(server.dir, "ingest.sqlite"), { readonly: true });
  try {
    const row = db
      .prepare("SELECT count(*) AS n FROM payments WHERE site_id = ? AND payment_id = ?")
      .get(siteId, paymentId) as { n: number };
    return row.n;
  } finally {
    db.close();
  }
}
