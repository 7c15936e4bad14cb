/**
 * Real RPC clients for integration tests: connect-node over HTTP/1.1
 * (Connect and gRPC-Web), over HTTP/2 (gRPC), `buf curl`, and an independent
 * @grpc/grpc-js client built from the same proto files.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import type { DescService } from "@bufbuild/protobuf";
import { type Client, ConnectError, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { type ErrorInfo, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";

export const ROOT = join(import.meta.dirname, "..", "..");

export type Protocol = "connect" | "grpcweb" | "grpc";
export const PROTOCOLS: Protocol[] = ["connect", "grpcweb", "grpc"];

/** A connect-es client for `service` speaking `protocol` to `baseUrl`. */
export function rpcClient<S extends DescService>(
  service: S,
  baseUrl: string,
  protocol: Protocol,
  options: { useBinaryFormat?: boolean } = {},
): Client<S> {
  const transport =
    protocol === "connect"
      ? createConnectTransport({ baseUrl, httpVersion: "1.1", ...options })
      : protocol === "grpcweb"
        ? createGrpcWebTransport({ baseUrl, httpVersion: "1.1", ...options })
        : createGrpcTransport({ baseUrl });
  return createClient(service, transport);
}

/** The code and message of a ConnectError and the REST code from its ErrorInfo. */
export function describeRpcError(err: unknown): { code: string; message: string; reason?: string } {
  const ce = ConnectError.from(err);
  const info = ce.findDetails(ErrorInfoSchema)[0] as ErrorInfo | undefined;
  return { code: codeName(ce.code), message: ce.rawMessage, reason: info?.reason };
}

function codeName(code: number): string {
  const names = [
    "ok",
    "canceled",
    "unknown",
    "invalid_argument",
    "deadline_exceeded",
    "not_found",
    "already_exists",
    "permission_denied",
    "resource_exhausted",
    "failed_precondition",
    "aborted",
    "out_of_range",
    "unimplemented",
    "internal",
    "unavailable",
    "data_loss",
    "unauthenticated",
  ];
  return names[code] ?? String(code);
}

/** Expects `p` to reject and returns the error's code, message and ErrorInfo reason. */
export async function rpcError(p: Promise<unknown>) {
  try {
    await p;
  } catch (err) {
    return describeRpcError(err);
  }
  throw new Error("expected the call to fail");
}

const execFileP = promisify(execFile);

/** Runs `buf curl` against the server; returns its parsed JSON output and exit code. */
export async function bufCurl(
  url: string,
  data: unknown,
  options: { protocol: Protocol; authorization?: string },
): Promise<{ exitCode: number; output: unknown; stderr: string }> {
  const args = ["curl", "--schema", ROOT, "--protocol", options.protocol];
  if (options.protocol === "grpc") args.push("--http2-prior-knowledge");
  if (options.authorization) args.push("-H", `Authorization: ${options.authorization}`);
  args.push("-d", JSON.stringify(data), url);
  try {
    const { stdout, stderr } = await execFileP(join(ROOT, "node_modules", ".bin", "buf"), args, {
      cwd: ROOT,
    });
    return { exitCode: 0, output: JSON.parse(stdout), stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    // buf curl prints an RPC error as JSON on stderr.
    let output: unknown;
    for (const text of [e.stdout, e.stderr]) {
      try {
        output = JSON.parse(text ?? "");
        break;
      } catch {
        output = undefined;
      }
    }
    return { exitCode: e.code ?? 1, output, stderr: e.stderr ?? "" };
  }
}

/** An independent gRPC client (@grpc/grpc-js) for a service of proto/ingest/v1. */
export function grpcJsClient(file: string, serviceName: string, port: number) {
  const def = protoLoader.loadSync(join(ROOT, "proto", "ingest", "v1", file), {
    includeDirs: [join(ROOT, "proto"), join(ROOT, "node_modules", "google-proto-files")],
    keepCase: true,
    longs: String,
    defaults: false,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    ingest: { v1: Record<string, grpc.ServiceClientConstructor> };
  };
  const Ctor = pkg.ingest.v1[serviceName];
  if (!Ctor) throw new Error(`no service ${serviceName}`);
  const client = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return {
    client,
    /** Calls a unary method; resolves with the response or rejects with the ServiceError. */
    call<T>(method: string, request: unknown, metadata: Record<string, string> = {}): Promise<T> {
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(metadata)) md.set(k, v);
      return new Promise((resolve, reject) => {
        const fn = (client as unknown as Record<string, (...args: unknown[]) => void>)[method];
        if (!fn) return reject(new Error(`no method ${method}`));
        fn.call(client, request, md, (err: grpc.ServiceError | null, res: T) =>
          err ? reject(err) : resolve(res),
        );
      });
    },
    /** Calls a server-streaming method and reads it to its end; resolves with every message or rejects with the ServiceError. */
    async readStream<T>(
      method: string,
      request: unknown,
      metadata: Record<string, string> = {},
    ): Promise<T[]> {
      const md = new grpc.Metadata();
      for (const [k, v] of Object.entries(metadata)) md.set(k, v);
      const fn = (client as unknown as Record<string, (...args: unknown[]) => AsyncIterable<T>>)[
        method
      ];
      if (!fn) throw new Error(`no method ${method}`);
      const messages: T[] = [];
      for await (const m of fn.call(client, request, md)) messages.push(m);
      return messages;
    },
    close: () => client.close(),
  };
}

/** Runs `buf` with `args` as given (e.g. `curl --list-services` without `--schema`). */
export async function runBuf(
  args: string[],
  options: { timeoutMs?: number } = {},
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFileP(join(ROOT, "node_modules", ".bin", "buf"), args, {
      cwd: ROOT,
      timeout: options.timeoutMs ?? 30_000,
    });
    return { exitCode: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { exitCode: e.code ?? 1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}
