/**
 * Runs the real service as a child process (`node --import tsx src/main.ts`),
 * its clock starting at TEST_NOW (child-clock.mjs) unless `env` sets
 * TEST_CLOCK_START_MS.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT } from "./rpc-clients.js";
import { TEST_NOW } from "./test-server.js";

export interface ChildServer {
  proc: ChildProcess;
  url: string;
  port: number;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or signal name) when the process ends. */
  exited: Promise<number | string>;
}

/** A free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Starts the service with `env` and waits until /healthz answers (or the process exits). */
export async function startChildServer(env: Record<string, string>): Promise<ChildServer> {
  const port = env.PORT ?? String(await freePort());
  const args = [
    "--import",
    "tsx",
    "--import",
    pathToFileURL(join(ROOT, "test", "helpers", "child-clock.mjs")).href,
  ];
  const proc = spawn(process.execPath, [...args, join(ROOT, "src", "main.ts")], {
    cwd: ROOT,
    env: {
      ...process.env,
      LOG_LEVEL: "silent",
      HOST: "127.0.0.1",
      TEST_CLOCK_START_MS: String(TEST_NOW),
      ...env,
      PORT: port,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout?.on("data", (d) => {
    out += d;
  });
  proc.stderr?.on("data", (d) => {
    out += d;
  });
  const exited = new Promise<number | string>((resolve) =>
    proc.once("exit", (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const url = `http://127.0.0.1:${port}`;
  let done = false;
  exited.then(() => {
    done = true;
  });
  for (let i = 0; i < 200 && !done; i++) {
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) return { proc, url, port: Number(port), output: () => out, exited };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { proc, url, port: Number(port), output: () => out, exited };
}
