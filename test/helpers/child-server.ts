/**
 * Runs the real service as a child process (`node --import tsx src/main.ts`),
 * its clock starting at TEST_NOW (child-clock.mjs) unless `env` sets
 * TEST_CLOCK_START_MS; waits for its readiness and stops its whole tree.
 */
import type { ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { isRunning, spawnTracked, stopTree } from "./child-processes.js";
import { ROOT } from "./rpc-clients.js";
import { TEST_NOW } from "./test-server.js";
import { timeouts } from "./timeouts.js";

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

/** What `startChildServer` waits for: `/readyz` answering 200 (default), or the process's exit. */
export interface ChildServerOptions {
  /**
   * "ready": resolves once `/readyz` answers 200, and fails with the
   * process's output if it exits first or the timeout passes; "exit": the
   * process is expected to stop by itself (a refused configuration), and the
   * caller awaits `exited`.
   */
  until?: "ready" | "exit";
}

/**
 * Starts the service with `env` in a process group of its own
 * (test/helpers/child-processes.ts: stopped with its tree whatever the
 * test's outcome, and checked for at the end of the run) and waits for its
 * readiness: `/readyz` 200, within the scaled childReady timeout
 * (test/helpers/timeouts.ts). A server that exits first, or does not become
 * ready in time, fails the test with everything it wrote.
 */
export async function startChildServer(
  env: Record<string, string>,
  options: ChildServerOptions = {},
): Promise<ChildServer> {
  const port = env.PORT ?? String(await freePort());
  const args = [
    "--import",
    "tsx",
    "--import",
    pathToFileURL(join(ROOT, "test", "helpers", "child-clock.mjs")).href,
  ];
  const proc = spawnTracked(process.execPath, [...args, join(ROOT, "src", "main.ts")], {
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
  const child: ChildServer = { proc, url, port: Number(port), output: () => out, exited };
  if (options.until === "exit") return child;

  let exitedWith: number | string | undefined;
  exited.then((code) => {
    exitedWith = code;
  });
  const deadline = Date.now() + timeouts().childReady;
  while (exitedWith === undefined && Date.now() < deadline) {
    try {
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.status === 200) return child;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  await stopTree(proc, "SIGKILL");
  throw new Error(
    exitedWith === undefined
      ? `the child server was not ready (/readyz 200) within ${timeouts().childReady} ms; its output:\n${out}`
      : `the child server exited (${exitedWith}) before it was ready; its output:\n${out}`,
  );
}

/**
 * Waits until the child's output matches `pattern` `count` times (e.g. one
 * "listening" line per worker), within the scaled childReady timeout; fails
 * with the output otherwise.
 */
export async function waitForOutput(child: ChildServer, pattern: RegExp, count = 1): Promise<void> {
  const global = new RegExp(
    pattern.source,
    pattern.flags.includes("g") ? pattern.flags : `${pattern.flags}g`,
  );
  const deadline = Date.now() + timeouts().childReady;
  while ((child.output().match(global) ?? []).length < count) {
    if (!isRunning(child.proc)) {
      throw new Error(
        `the child server exited before printing ${pattern} ${count}×:\n${child.output()}`,
      );
    }
    if (Date.now() > deadline) {
      throw new Error(
        `the child server did not print ${pattern} ${count}× within ${timeouts().childReady} ms:\n${child.output()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Stops the child and its tree (SIGTERM, then SIGKILL past the stop timeout); resolves with how it exited. */
export function stopChildServer(
  child: ChildServer,
  signal: NodeJS.Signals = "SIGTERM",
): Promise<number | string> {
  return stopTree(child.proc, signal);
}
