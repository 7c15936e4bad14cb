/**
 * Vitest global set-up and teardown: the run's pid directory
 * (test/helpers/child-processes.ts writes one file per process it starts,
 * each the leader of its own process group). At the end of the run any
 * group with a process still alive is killed and the run fails, naming it.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PID_DIR_ENV } from "./child-processes.js";

/**
 * Whether any process of the group `pid` leads is alive (the leader or what
 * it left behind): on Linux, a process in /proc with that group that is not
 * a zombie (killed, waiting for its parent to reap it); elsewhere, kill 0.
 */
function groupAlive(pid: number): boolean {
  if (existsSync("/proc/self/stat")) {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      } catch {
        continue;
      }
      // pid (comm) state ppid pgrp …: comm may hold spaces, so read after its last ")".
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(pgrp) === pid && state !== "Z" && state !== "X") return true;
    }
    return false;
  }
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), "ingest-test-pids-"));
  process.env[PID_DIR_ENV] = dir;
  return function teardown() {
    const leaked: string[] = [];
    for (const name of readdirSync(dir)) {
      const pid = Number(name);
      if (!Number.isSafeInteger(pid) || !groupAlive(pid)) continue;
      leaked.push(`process group ${pid}: ${readFileSync(join(dir, name), "utf8")}`);
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    }
    rmSync(dir, { recursive: true, force: true });
    if (leaked.length > 0) {
      // Vitest reports an error thrown here but keeps its exit code: fail the run ourselves.
      process.exitCode = 1;
      throw new Error(
        `the suite left ${leaked.length} process(es) running (now killed):\n${leaked.join("\n")}`,
      );
    }
  };
}
