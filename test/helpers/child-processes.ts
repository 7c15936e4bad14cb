/**
 * Every process the suite starts is registered here: it runs in a process
 * group of its own (`detached`), so stopping it stops its whole tree (a
 * WORKERS cluster's workers, `npm start`'s server); its pid is written to
 * the run's pid directory (INGEST_TEST_PID_DIR, made by the global set-up in
 * test/helpers/leaked-processes.ts, which fails the run if any is still
 * alive at the end); and whatever is still running when the test that
 * started it finishes, or at the end of its test file (the setup file
 * test/helpers/stop-children.ts), is killed.
 */
import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { onTestFinished } from "vitest";
import { timeouts } from "./timeouts.js";

/** The environment variable naming the run's pid directory. */
export const PID_DIR_ENV = "INGEST_TEST_PID_DIR";

/** Every tree started by this test worker (a group may outlive its leader). */
const started = new Set<ChildProcess>();

/** Whether the process has not exited yet. */
export function isRunning(proc: ChildProcess): boolean {
  return proc.exitCode === null && proc.signalCode === null;
}

/** Sends `signal` to the process's whole group (its tree). */
export function signalTree(proc: ChildProcess, signal: NodeJS.Signals): void {
  if (proc.pid === undefined) return;
  try {
    process.kill(-proc.pid, signal);
  } catch {
    // The group is gone already.
  }
}

process.once("exit", () => {
  for (const proc of started) signalTree(proc, "SIGKILL");
});

/** Kills every tree this test worker started that is still alive (after each test file). */
export async function killAllStarted(): Promise<void> {
  const leaders = [...started];
  started.clear();
  for (const proc of leaders) signalTree(proc, "SIGKILL");
  // Until Node has reaped them: a killed child is a zombie, still "there", until then.
  await Promise.all(
    leaders.filter(isRunning).map((proc) => new Promise<void>((r) => proc.once("exit", () => r()))),
  );
}

/**
 * Spawns `command` in a process group of its own, registered as above. When
 * called inside a test, the tree is killed once the test finishes, whatever
 * its outcome; otherwise (a beforeAll) the caller stops it, and the worker's
 * exit does at the latest.
 */
export function spawnTracked(
  command: string,
  args: readonly string[],
  options: SpawnOptions,
): ChildProcess {
  const proc = spawn(command, args, { ...options, detached: true });
  const pid = proc.pid;
  const dir = process.env[PID_DIR_ENV];
  const pidFile = dir && pid !== undefined ? join(dir, String(pid)) : undefined;
  if (pidFile) writeFileSync(pidFile, `${command} ${args.join(" ")}`);
  started.add(proc);
  try {
    // Whatever the outcome: the whole group, even if its leader has exited and left children.
    onTestFinished(() => signalTree(proc, "SIGKILL"));
  } catch {
    // Not inside a test (a beforeAll): the caller stops it, the end of the file at the latest.
  }
  return proc;
}

/**
 * Stops a process tree: `signal` to the group, then SIGKILL if it has not
 * exited within the stop timeout. Resolves with the exit code or signal.
 */
export async function stopTree(
  proc: ChildProcess,
  signal: NodeJS.Signals = "SIGTERM",
): Promise<number | string> {
  if (isRunning(proc)) {
    const exited = new Promise<void>((r) => proc.once("exit", () => r()));
    signalTree(proc, signal);
    const timer = setTimeout(() => signalTree(proc, "SIGKILL"), timeouts().childStop);
    await exited;
    clearTimeout(timer);
  }
  return proc.exitCode ?? proc.signalCode ?? -1;
}
