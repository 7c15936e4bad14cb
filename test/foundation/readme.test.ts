/**
 * The README runs as written, in order, on the demo's tenant: every `sh`
 * block of README.md (then the one of examples/README.md) is run by bash, one
 * script, with three stand-ins a test needs: `npm ci` does nothing (this
 * checkout is installed), `npm start` starts the service from source in the
 * background and waits for /readyz (the built `dist/` is the same code), and
 * the port 8080 is a free port. The store is a fresh SQLite file and
 * STRIPE_WEBHOOK_SECRET a made-up signing secret. Only the blocks that install
 * or run the whole suite are not run (`TWO_COMMANDS`, `DEVELOPMENT`), and the
 * test fails when they change. Each command's answer is checked below.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/child-server.js";
import { ROOT } from "../helpers/rpc-clients.js";
import { scaled } from "../helpers/timeouts.js";

const run = promisify(execFile);

/** The blocks not run: they install, start on 8080 for a person, or run the suite. */
const TWO_COMMANDS = `npm ci && npm start     # runs the service on 127.0.0.1:8080 with the embedded SQLite store
npm test                # runs every test (unit, store contract, integration, process, browser)`;
const DEVELOPMENT_FIRST_LINE = "npm run generate     # buf generate";

/** The `sh` blocks of a Markdown file, in order. */
function shBlocks(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  return [...text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => (m[1] as string).trimEnd());
}

const dir = mkdtempSync(join(tmpdir(), "ingest-readme-"));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(join(ROOT, "demo.env"), { force: true });
});

describe("README", () => {
  it("has the blocks this test leaves out exactly as it knows them", () => {
    const blocks = shBlocks("README.md");
    expect(blocks[0]).toBe(TWO_COMMANDS);
    expect(blocks.filter((b) => b.startsWith(DEVELOPMENT_FIRST_LINE))).toHaveLength(1);
  });

  it("runs every other command in order on the demo's tenant, and each answers as shown", async () => {
    const port = await freePort();
    const blocks = [
      ...shBlocks("README.md").filter(
        (b) => b !== TWO_COMMANDS && !b.startsWith(DEVELOPMENT_FIRST_LINE),
      ),
      ...shBlocks("examples/README.md"),
    ];
    const script = `set -euo pipefail
npm() {
  case "$1" in
    ci) ;;
    start)
      node --import tsx src/main.ts >"$README_DIR/server.log" 2>&1 &
      echo $! >"$README_DIR/server.pid"
      for _ in $(seq 1 600); do
        curl -sf "http://127.0.0.1:${port}/readyz" >/dev/null && return 0
        sleep 0.1
      done
      echo "the server did not get ready" >&2; return 1 ;;
    *) command npm "$@" ;;
  esac
}
# Stop the server and wait until it has exited: its close may still rewrite the analytics file.
stop_server() {
  local pid
  pid="$(cat "$README_DIR/server.pid" 2>/dev/null)" || return 0
  kill "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}
trap stop_server EXIT
${blocks.join("\n\n").replaceAll("127.0.0.1:8080", `127.0.0.1:${port}`)}
`;
    const env = {
      ...process.env,
      README_DIR: dir,
      PORT: String(port),
      HOST: "127.0.0.1",
      STORE_URL: `sqlite:${join(dir, "ingest.sqlite")}`,
      ADMIN_TOKEN: "",
      LOG_LEVEL: "warn",
      STRIPE_WEBHOOK_SECRET: "whsec_readme_test_signing_secret",
      INGEST_URL: `http://127.0.0.1:${port}`,
    };
    const { stdout, stderr } = await run("bash", ["-c", script], {
      cwd: ROOT,
      env,
      timeout: scaled(240_000),
      maxBuffer: 16 * 1024 * 1024,
    }).catch((err: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`${err.message}\nstdout:\n${err.stdout}\nstderr:\n${err.stderr}`);
    });
    const out = stdout.replaceAll("\r", "");
    // What ran and answered, for a person reading a failure (not committed).
    mkdirSync(join(ROOT, "test-artifacts"), { recursive: true });
    writeFileSync(join(ROOT, "test-artifacts", "readme-run.txt"), `${out}\n--- stderr\n${stderr}`);
    // Quickstart: the demo's line, two events (204), the payment, its channel from the newsletter.
    expect(out).toMatch(
      /^export KEY=mk_live_[0-9a-f]{48} SITE=site_[0-9a-f]{24} ADMIN_TOKEN=[0-9a-f]{48} ACCOUNT=acct_[0-9a-f]{24} USER_ID=user_[0-9a-f]{24}$/m,
    );
    expect(stderr).toMatch(/^loaded 30 days into site_/m);
    // (curl -s prints no newline after a JSON body, so an answer may start mid-line.)
    expect(out.match(/HTTP\/1\.1 204 No Content$/gm)).toHaveLength(3);
    expect(out).toContain('{"ok":true,"data":{"payment_id":"pay_1001"}}');
    expect(out).toMatch(
      /"paymentId":"pay_1001".*"channel":"Email".*"source":"newsletter","medium":"email".*"link":"user_id"/,
    );
    // The Stripe path, the admin commands and erasure, with the demo's ids.
    expect(out).toMatch(
      /\{"connector_id":"conn_[0-9a-f]{24}","url_path":"\/api\/v1\/connectors\/conn_[0-9a-f]{24}"\}$/m,
    );
    expect(out).toMatch(
      /^\{"account_id":"acct_[0-9a-f]{24}","owner_user_id":"user_[0-9a-f]{24}"\}$/m,
    );
    expect(out).toMatch(/^\{"site_id":"site_[0-9a-f]{24}"\}$/m);
    expect(
      out.match(/^\{"key_id":"key_[0-9a-f]{24}","key":"mk_live_[0-9a-f]{48}"\}$/gm),
    ).toHaveLength(2);
    expect(out).toMatch(
      /^\[\{"key_id":"key_[0-9a-f]{24}",.*"name":"dashboard","scopes":\["reports"\]/m,
    );
    expect(out).toMatch(/^\{"customers":1,"payments":1,"subscriptions":0,"customer_links":\d+\}$/m);
    // Calling it: new payments over REST, Connect (buf curl) and Connect JSON; events over gRPC-Web and gRPC.
    expect(out).toContain('{"ok":true,"data":{"payment_id":"pay_2001"}}');
    expect(out).toMatch(/"paymentId": "pay_2002"/);
    expect(out).toContain('{"paymentId":"pay_2003"}');
    expect(out.match(/"accepted": 1/g)).toHaveLength(2);
    expect(out).toMatch(/"events": \[/);
    // examples/README.md: the example's test payment and events on the demo's site.
    expect(out).toMatch(
      /^payment pay_example_\d+ recorded\n3 events recorded; quota remaining \d+$/m,
    );
    expect(out).not.toMatch(/"ok":false|"code": "|error:/);
  }, 300_000);
});
