/**
 * Runs the admin CLI the way the README says: `npm run --silent admin -- …`,
 * its clock starting at TEST_NOW (child-clock.mjs) unless `env` sets
 * TEST_CLOCK_START_MS.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { ROOT } from "./rpc-clients.js";
import { TEST_NOW } from "./test-server.js";

const CHILD_CLOCK = pathToFileURL(join(ROOT, "test", "helpers", "child-clock.mjs")).href;

const execFileP = promisify(execFile);

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

/** Runs `npm run --silent <script> -- <args>` in the repository, as a user would. */
export async function runNpmScript(
  script: string,
  args: string[],
  env: Record<string, string>,
): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  let exitCode = 0;
  try {
    ({ stdout, stderr } = await execFileP("npm", ["run", "--silent", script, "--", ...args], {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import ${CHILD_CLOCK}`.trim(),
        TEST_CLOCK_START_MS: String(TEST_NOW),
        ...env,
      },
    }));
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    exitCode = e.code ?? 1;
    stdout = e.stdout ?? "";
    stderr = e.stderr ?? "";
  }
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch {
    json = undefined;
  }
  return { exitCode, stdout, stderr, json };
}
