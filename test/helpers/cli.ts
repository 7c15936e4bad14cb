/**
 * Runs the admin CLI the way the README says: `npm run --silent admin -- …`,
 * its clock starting at TEST_NOW (child-clock.mjs) unless `env` sets
 * TEST_CLOCK_START_MS.
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { signalTree, spawnTracked } from "./child-processes.js";
import { ROOT } from "./rpc-clients.js";
import { TEST_NOW } from "./test-server.js";
import { timeouts } from "./timeouts.js";

const CHILD_CLOCK = pathToFileURL(join(ROOT, "test", "helpers", "child-clock.mjs")).href;

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON, when it is JSON. */
  json: unknown;
}

export function runAdminCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  return runNpmScript("admin", args, env);
}

/**
 * Runs `npm run --silent <script> -- <args>` in the repository, as a user
 * would, in a process group of its own (test/helpers/child-processes.ts). It
 * must exit within the scaled cli timeout (test/helpers/timeouts.ts); if it
 * does not, its whole tree is killed and the test fails with what it wrote.
 */
export async function runNpmScript(
  script: string,
  args: string[],
  env: Record<string, string>,
): Promise<CliResult> {
  const proc = spawnTracked("npm", ["run", "--silent", script, "--", ...args], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import ${CHILD_CLOCK}`.trim(),
      TEST_CLOCK_START_MS: String(TEST_NOW),
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout?.on("data", (d) => {
    stdout += d;
  });
  proc.stderr?.on("data", (d) => {
    stderr += d;
  });
  const limit = timeouts().cli;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    signalTree(proc, "SIGKILL");
  }, limit);
  const exitCode = await new Promise<number>((resolve, reject) => {
    proc.once("error", reject);
    // "close": the exit, and stdout and stderr read to their end.
    proc.once("close", (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  }).finally(() => clearTimeout(timer));
  if (timedOut) {
    throw new Error(
      `npm run ${script} ${args.join(" ")} did not exit within ${limit} ms; stdout:\n${stdout}\nstderr:\n${stderr}`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = undefined;
  }
  return { exitCode, stdout, stderr, json };
}
