/**
 * Child processes of the benchmark: start, wait until ready, sample memory,
 * and always stop them (also on errors and ctrl-c).
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

const children = new Set();

/** Kills every child's process group at once (sync: usable in `exit` handlers). */
export function killAll(signal = "SIGKILL") {
  for (const c of children) {
    try {
      process.kill(-c.pid, signal);
    } catch {
      // already gone
    }
  }
  children.clear();
}

let hooked = false;
function hookExit() {
  if (hooked) return;
  hooked = true;
  process.on("exit", () => killAll());
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(sig, () => {
      killAll();
      process.stderr.write(`\nbench: ${sig}, children stopped\n`);
      process.exit(130);
    });
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts `node args…` in its own process group (so its cluster workers can be
 * stopped with it) and resolves once `GET <url><readyPath>` answers 200
 * (within `readyMs`: a server on a large data directory takes longer).
 */
export async function startProcess({
  args,
  env,
  port,
  readyPath = "/healthz",
  name,
  readyMs = 20_000,
}) {
  hookExit();
  const proc = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  children.add(proc);
  let output = "";
  const keep = (d) => {
    output += d;
    if (output.length > 20_000) output = output.slice(-10_000);
  };
  proc.stdout.on("data", keep);
  proc.stderr.on("data", keep);
  let exited = false;
  const exit = new Promise((resolve) =>
    proc.once("exit", (code, signal) => {
      exited = true;
      children.delete(proc);
      resolve(code ?? signal);
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + readyMs;
  for (;;) {
    if (exited) throw new Error(`${name} exited during start-up:\n${output}`);
    if (Date.now() > deadline) {
      stop();
      throw new Error(`${name} did not become ready:\n${output}`);
    }
    try {
      const res = await fetch(url + readyPath);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  function stop(timeoutMs = 10_000) {
    if (exited) return exit;
    try {
      process.kill(-proc.pid, "SIGTERM");
    } catch {
      // gone
    }
    const t = setTimeout(() => {
      try {
        process.kill(-proc.pid, "SIGKILL");
      } catch {
        // gone
      }
    }, timeoutMs);
    return exit.finally(() => clearTimeout(t));
  }
  return { proc, pid: proc.pid, url, port, stop, output: () => output, exit };
}

/** Pids of a process and all its descendants (cluster workers). */
function processTree(pid) {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      const tasks = readFileSync(`/proc/${out[i]}/task/${out[i]}/children`, "utf8");
      for (const c of tasks.split(/\s+/).filter(Boolean)) out.push(Number(c));
    } catch {
      // gone, or no /proc
    }
  }
  return out;
}

function statusKb(pid, field) {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(
      readFileSync(`/proc/${pid}/status`, "utf8"),
    );
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/**
 * Samples the resident memory of a process tree every `everyMs`. `peak()`
 * gives the highest total VmRSS seen since the last `reset()`, and for a
 * single process never less than the kernel's own high-water mark VmHWM
 * when no reset happened.
 */
export function rssSampler(pid, everyMs = 50) {
  let peakKb = 0;
  let resetOnce = false;
  const sample = () => {
    const total = processTree(pid).reduce((s, p) => s + statusKb(p, "VmRSS"), 0);
    if (total > peakKb) peakKb = total;
  };
  sample();
  const timer = setInterval(sample, everyMs);
  timer.unref();
  return {
    reset() {
      resetOnce = true;
      peakKb = 0;
      sample();
    },
    /** Peak in MB. */
    peak() {
      sample();
      const tree = processTree(pid);
      const hwm = tree.length === 1 && !resetOnce ? statusKb(pid, "VmHWM") : 0;
      return Math.max(peakKb, hwm) / 1024;
    },
    stop() {
      clearInterval(timer);
    },
  };
}

// ---------------------------------------------------------------- CPU accounting

const TICKS_PER_SEC = 100; // USER_HZ on Linux

function systemTicks() {
  try {
    const v = readFileSync("/proc/stat", "utf8")
      .split("\n")[0]
      .trim()
      .split(/\s+/)
      .slice(1, 9)
      .map(Number);
    return { busy: v[0] + v[1] + v[2] + v[5] + v[6] + v[7], total: v.reduce((a, b) => a + b, 0) };
  } catch {
    return { busy: 0, total: 0 };
  }
}

function treeTicks(pid) {
  let sum = 0;
  for (const p of processTree(pid)) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      sum += Number(f[11]) + Number(f[12]); // utime, stime
    } catch {
      // gone
    }
  }
  return sum;
}

/**
 * CPU use during a phase, in cores: the server's, this bench process's, and
 * everything else's on the machine ("foreign": other jobs, which make the
 * numbers noisy). `stop()` returns them.
 */
export function cpuMeter(serverPid) {
  const s0 = systemTicks();
  const v0 = treeTicks(serverPid);
  const b0 = process.cpuUsage();
  const t0 = Date.now();
  return {
    stop() {
      const secs = (Date.now() - t0) / 1000;
      const s1 = systemTicks();
      const server = (treeTicks(serverPid) - v0) / TICKS_PER_SEC / secs;
      const b = process.cpuUsage(b0);
      const bench = (b.user + b.system) / 1e6 / secs;
      const busy = (s1.busy - s0.busy) / TICKS_PER_SEC / secs;
      const r = (x) => Math.round(x * 100) / 100;
      return {
        serverCores: r(server),
        benchCores: r(bench),
        foreignCores: r(Math.max(0, busy - server - bench)),
      };
    },
  };
}

/**
 * Waits (up to `maxWaitMs`) until the machine is quiet: less than
 * `maxBusyCores` of CPU used by anything over one second. Returns the last
 * reading, in cores.
 */
export async function waitForQuiet({ maxWaitMs = 60_000, maxBusyCores = 0.15 } = {}) {
  const deadline = Date.now() + maxWaitMs;
  for (;;) {
    const a = systemTicks();
    await new Promise((r) => setTimeout(r, 1000));
    const b = systemTicks();
    const busy = (b.busy - a.busy) / TICKS_PER_SEC;
    if (busy <= maxBusyCores || Date.now() >= deadline) return Math.round(busy * 100) / 100;
  }
}
