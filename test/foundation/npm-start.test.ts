/**
 * `npm start` as a supervisor (Docker, systemd, a terminal) runs it: SIGTERM
 * sent to the npm process reaches the server, which shuts down gracefully;
 * nothing is left serving as an orphan.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { signalTree, spawnTracked } from "../helpers/child-processes.js";
import { freePort } from "../helpers/child-server.js";
import { ROOT } from "../helpers/rpc-clients.js";
import { scaled, timeouts } from "../helpers/timeouts.js";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ingest-npm-start-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it("forwards SIGTERM to the server, which stops; npm exits 0", {
  timeout: scaled(180_000),
}, async () => {
  const port = await freePort();
  // `npm start` builds first (prestart), as a user runs it.
  const npm = spawnTracked("npm", ["start"], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: "127.0.0.1",
      STORE_URL: `sqlite:${join(dir, "db.sqlite")}`,
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  npm.stdout?.on("data", (d) => {
    out += d;
  });
  npm.stderr?.on("data", (d) => {
    out += d;
  });
  const exited = new Promise<number | string>((r) =>
    npm.once("exit", (code, signal) => r(code ?? signal ?? -1)),
  );
  let serverPid: number | undefined;
  try {
    // Ready: the server's "listening" line (npm builds first, so this may take a while).
    const deadline = Date.now() + 4 * timeouts().childReady;
    while (serverPid === undefined) {
      const m = /"pid":(\d+)[^\n]*"msg":"listening"/.exec(out);
      if (m) serverPid = Number(m[1]);
      else if (npm.exitCode !== null || Date.now() > deadline) {
        throw new Error(`npm start did not print its listening line; its output:\n${out}`);
      } else await new Promise((r) => setTimeout(r, 100));
    }
    expect(serverPid).not.toBe(npm.pid);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);

    npm.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(out).toContain('"signal":"SIGTERM","msg":"shutting down"');
    expect(alive(serverPid as number)).toBe(false);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  } finally {
    if (serverPid !== undefined && alive(serverPid)) process.kill(serverPid, "SIGKILL");
    signalTree(npm, "SIGKILL");
  }
});
