/**
 * What the ingestion costs in process, without HTTP, for builds compared
 * side by side (docs/dashboard.md, "Ingestion cost"): CPU per unit of
 *
 *   events    the events application with its attributor over the SQLite store, row b's
 *             bodies (50 pageviews, 12,800 visitors cycled), 64 requests in flight, µs/request
 *   payments  new payments through `commitPayments` in groups of 64, each with its customer,
 *             µs/payment
 *   resends   the same 100 payments again (row d), µs/payment
 *
 * Each case runs in a child process per build, the builds interleaved round
 * by round; the medians are printed. The machine's noise moves whole rounds,
 * so compare builds of the same run only.
 *
 *   npm run --silent build && node bench/ingest-floor.mjs [rounds=5] [dist ...]
 *
 * Another build's dist/ must sit beside a node_modules (e.g. a symlink to this one's).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const SELF = fileURLToPath(import.meta.url);
const CASES = ["events", "payments", "resends"];

if (process.argv[2] === "--child") {
  const [, , , name, dist] = process.argv;
  console.log(JSON.stringify(await measure(name, dist)));
} else {
  const rounds = Number(process.argv[2] ?? 5);
  const dists = process.argv.slice(3).map((d) => resolve(d));
  if (dists.length === 0) dists.push(join(dirname(SELF), "../dist"));
  const results = new Map(); // `${case}\0${dist}` → µs[]
  for (let r = 0; r < rounds; r++) {
    for (const name of CASES) {
      for (const dist of dists) {
        const out = execFileSync(process.execPath, [SELF, "--child", name, dist], {
          encoding: "utf8",
        });
        const key = `${name}\u0000${dist}`;
        results.set(key, [...(results.get(key) ?? []), JSON.parse(out).us]);
      }
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const name of CASES) {
    for (const dist of dists) {
      const xs = results.get(`${name}\u0000${dist}`);
      console.log(
        `${name.padEnd(9)} ${median(xs).toFixed(1).padStart(7)} µs  (${xs.map((x) => x.toFixed(1)).join(" / ")})  ${dist}`,
      );
    }
  }
}

/** CPU µs per unit of one case against the build at `dist`. */
async function measure(name, dist) {
  const { createSqliteStore } = await import(join(dist, "src/store/sqlite/sqlite-store.js"));
  const dir = mkdtempSync(join(tmpdir(), "ingest-floor-"));
  const store = createSqliteStore(join(dir, "db.sqlite"));
  const T = Date.UTC(2026, 0, 15);
  try {
    await store.createAccount({ id: "acct", name: "x", plan: "scale", createdAt: T });
    await store.createSite({
      id: "site",
      accountId: "acct",
      hostnames: ["example.com"],
      createdAt: T,
    });
    return name === "events" ? await events(dist, store, T) : await payments(store, T, name);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function events(dist, raw, T) {
  const { createEventsApp } = await import(join(dist, "src/domain/events/events-app.js"));
  const { cacheDirectory } = await import(join(dist, "src/store/directory-cache.js"));
  const { createAttributor } = await import(join(dist, "src/domain/attribution/attribute.js"));
  const store = cacheDirectory(raw);
  let now = T;
  const clock = { now: () => now };
  const app = await createEventsApp({
    store,
    clock,
    queue: { capacity: 10_000, batchMax: 256, flushMs: 0 },
    attribution: createAttributor({ store, clock }),
  });
  const principal = {
    id: "key",
    siteId: "site",
    accountId: "acct",
    scopes: ["events"],
    name: "k",
    hash: "h",
    prefix: "p",
    createdBy: "u",
    createdAt: T,
  };
  const UAS = [
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "Mozilla/5.0 (Windows NT 10.0; rv:125.0) Gecko/20100101 Firefox/125.0",
  ];
  let n = 0;
  // Row b's batch elements (bench/lib/bodies.mjs): 256 bodies × 50, so 12,800 visitors cycled.
  const element = () => {
    const i = n++ % 12_800;
    return {
      e: "pageview",
      u: ["https://example.com/", "https://example.com/pricing"][i % 2],
      ip: `${11 + ((i >> 16) & 0x7f)}.${(i >> 8) & 255}.${i & 255}.${1 + (i % 250)}`,
      ua: UAS[i % 2],
    };
  };
  const client = { ip: "198.51.100.1", userAgent: UAS[0] };
  const run = async (requests) => {
    let i = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (i++ < requests) {
          now += 1;
          await app.record(
            principal,
            { s: "site", b: Array.from({ length: 50 }, element) },
            client,
          );
        }
      }),
    );
  };
  await run(400);
  const cpu = process.cpuUsage();
  await run(1200);
  const used = process.cpuUsage(cpu);
  await app.drain();
  return { us: (used.user + used.system) / 1200 };
}

async function payments(store, T, name) {
  const N = 20_000;
  const cpu = process.cpuUsage();
  for (let i = 0; i < N; i += 64) {
    const writes = [];
    for (let j = i; j < i + 64; j++) {
      const k = name === "resends" ? j % 100 : j;
      const p = {
        siteId: "site",
        paymentId: `pay_${k}`,
        customerId: `cus_${name === "resends" ? k % 20 : k}`,
        currency: "USD",
        amountMinor: 2999,
        kind: "charge",
        status: "succeeded",
        paidAt: T - 1000,
        metadata: {},
        createdAt: T,
        updatedAt: T,
      };
      writes.push({
        payment: p,
        customer: {
          siteId: "site",
          customerId: p.customerId,
          at: T,
          email: `${p.customerId}@example.com`,
        },
      });
    }
    await store.commitPayments(writes);
  }
  const used = process.cpuUsage(cpu);
  return { us: (used.user + used.system) / N };
}
