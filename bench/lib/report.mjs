/**
 * What `npm run bench` makes of its measurements: the baseline rate, issue
 * 13's targets, the markdown table and the result document. Pure functions of
 * the rows measured; bench/run.mjs prints and writes what they return.
 */

/** A number for the table: `–` when absent, else rounded to `d` places with thousands separators. */
export function fmt(x, d = 0) {
  if (x == null || Number.isNaN(x)) return "–";
  return Number(x.toFixed(d)).toLocaleString("en-US");
}

/** `x` rounded to `d` places, null stays null. */
export const round = (x, d = 0) => (x == null ? null : Number(x.toFixed(d)));

/**
 * A row of the table and the result file, its columns in one order whatever
 * measured it: `run` is the load generator's result (okPerSec, latencyMs,
 * non2xx), `cpuUse` the server's CPU over the run; absent columns stay
 * undefined (left out of the JSON).
 */
export function resultRow(scenario, m) {
  return {
    id: scenario.id,
    label: scenario.label,
    workers: scenario.workers ?? 1,
    requestsPerSec: m.run.okPerSec,
    eventsPerSec: m.eventsPerSec,
    ackedEventsPerSec: m.ackedEventsPerSec,
    storedRows: m.stored,
    p50Ms: m.run.latencyMs.p50,
    p99Ms: m.run.latencyMs.p99,
    non2xx: m.run.non2xx,
    rateLimited503: m.rateLimited503,
    errors: m.errors,
    peakRssMb: m.peakRssMb,
    cpu: { ...m.cpuUse, serverUsPerRequest: (m.cpuUse.serverCores * 1e6) / m.run.okPerSec },
    quietBefore: m.quietBefore,
    max: m.run,
  };
}

/**
 * Requests/s ratios are taken against: the baseline's, or the mean of the
 * first and the last baseline when it ran twice. Undefined without a baseline.
 */
export function baselineRate(rows) {
  const first = rows.find((r) => r.id === "baseline");
  const again = rows.find((r) => r.id === "baseline2");
  if (again)
    return first ? (first.requestsPerSec + again.requestsPerSec) / 2 : again.requestsPerSec;
  return first?.requestsPerSec;
}

/** Issue 13's targets, as ratios to the same run's baseline where they are ratios. */
export function targets(rows, baselineRps = baselineRate(rows)) {
  const by = Object.fromEntries(rows.map((r) => [r.id, r]));
  const out = [];
  const base = by.baseline;
  if (by.a && baselineRps) {
    const ratio = by.a.requestsPerSec / baselineRps;
    out.push({
      target: "a) single events ≥ 0.35× baseline requests/s (stretch 0.5×)",
      value: `${fmt(ratio, 2)}×`,
      met: ratio >= 0.35,
    });
  }
  if (by.a) {
    // Rows are counted a moment after the load stops: in-flight requests land after the 2xx count.
    const ratio = by.a.eventsPerSec / by.a.ackedEventsPerSec;
    out.push({
      target: "a) stored events/s = 2xx answers/s",
      value: `${fmt(by.a.eventsPerSec)} stored, ${fmt(by.a.ackedEventsPerSec)} acknowledged`,
      met: ratio >= 0.99,
    });
  }
  if (by.f && by.a) {
    const ratio = by.f.requestsPerSec / by.a.requestsPerSec;
    out.push({
      target: "collect ≈ events endpoint (same application function)",
      value: `${fmt(ratio, 2)}× a)`,
      met: ratio >= 0.8,
    });
  }
  if (by.b) {
    out.push({
      target: "b) batches of 50 ≥ 150,000 stored events/s",
      value: fmt(by.b.eventsPerSec),
      met: by.b.eventsPerSec >= 150_000,
    });
  }
  for (const id of ["c", "d"]) {
    if (!by[id] || !baselineRps) continue;
    const ratio = by[id].requestsPerSec / baselineRps;
    out.push({
      target: `${id}) payments ≥ 0.35× baseline requests/s`,
      value: `${fmt(ratio, 2)}×`,
      met: ratio >= 0.35,
    });
  }
  for (const r of rows.filter((x) => x.at70)) {
    const p99 = r.at70.paced.latencyMs.p99;
    out.push({
      target: `${r.id}) p99 < 25 ms at 70% of max (${fmt(r.at70.rate)}/s, paced)`,
      value: `${fmt(p99, 1)} ms`,
      met: p99 != null && p99 < 25,
    });
  }
  if (by.r?.retention) {
    const r = by.r.retention;
    out.push({
      target: "r) single-event p99 during a prune ≤ 2× without",
      value: `${fmt(r.ratio, 2)}× (${fmt(r.pruneP99Ms, 1)} vs ${fmt(r.keepP99Ms, 1)} ms, ${fmt(r.prunedDuring)} events pruned while measured)`,
      met: r.ratio <= 2 && r.prunedDuring > 0,
    });
  }
  if (by.e && by.b) {
    const ratio = by.e.eventsPerSec / by.b.eventsPerSec;
    out.push({
      target: "e) gRPC batches within 10% of REST batches (stored events/s)",
      value: `${fmt(ratio, 2)}× b)`,
      met: ratio >= 0.9,
    });
  }
  for (const o of [by.o, by.om].filter((r) => r?.calls)) {
    const slowest = Math.max(...Object.values(o.calls).map((c) => c.maxMs));
    out.push({
      target: `${o.id}) every call behind a 90-day view < 200 ms (${fmt(o.events)} events, ${fmt(o.payments)} payments)`,
      value: `${fmt(slowest, 1)} ms (slowest of ${Object.keys(o.calls).join(", ")})`,
      met: slowest < 200,
    });
  }
  // Not a target: server CPU per request against a bare request's, which moves less with the machine.
  for (const id of ["a", "c"]) {
    if (!by[id]?.cpu || !base?.cpu) continue;
    out.push({
      target: `(info) ${id}) server CPU per request ÷ baseline's`,
      value: `${fmt(by[id].cpu.serverUsPerRequest / base.cpu.serverUsPerRequest, 2)}× (${fmt(by[id].cpu.serverUsPerRequest)} µs)`,
      met: undefined,
    });
  }
  return out;
}

/**
 * The markdown report: the rows, the 70% runs, the targets and a line on the
 * machine and the settings (`settings.serverEnv`: the server's environment).
 */
export function renderTable({ rows, baselineRps, targets: met, machine, settings, workersRan }) {
  const lines = [];
  const throughput = rows.filter((x) => x.requestsPerSec !== undefined);
  if (throughput.length > 0)
    lines.push(
      "| Scenario | requests/s | × baseline | stored events/s | p50 ms | p99 ms | non-2xx (503) | peak RSS MB | CPU cores server/client/other |",
    );
  if (throughput.length > 0) lines.push("|---|--:|--:|--:|--:|--:|--:|--:|--:|");
  for (const r of throughput) {
    const ratio = baselineRps ? `${fmt(r.requestsPerSec / baselineRps, 2)}×` : "";
    lines.push(
      `| ${r.label} | ${fmt(r.requestsPerSec)} | ${ratio} | ${fmt(r.eventsPerSec)} | ${fmt(r.p50Ms, 1)} | ${fmt(r.p99Ms, 1)} | ${fmt(r.non2xx)} (${fmt(r.rateLimited503)}) | ${fmt(r.peakRssMb)} | ${r.cpu ? `${fmt(r.cpu.serverCores, 2)}/${fmt(r.cpu.benchCores, 2)}/${fmt(r.cpu.foreignCores, 2)}` : ""} |`,
    );
  }
  const rateRows = rows.filter((r) => r.at70);
  if (rateRows.length > 0) {
    lines.push("");
    lines.push(
      "| At 70% of max | rate/s | paced p50 ms | paced p99 ms | autocannon overallRate p50 ms | p99 ms | non-2xx |",
    );
    lines.push("|---|--:|--:|--:|--:|--:|--:|");
    for (const r of rateRows) {
      const p = r.at70.paced;
      const a = r.at70.autocannon;
      lines.push(
        `| ${r.label} | ${fmt(r.at70.rate)} | ${fmt(p.latencyMs.p50, 1)} | ${fmt(p.latencyMs.p99, 1)} | ${fmt(a.latencyMs.p50, 1)} | ${fmt(a.latencyMs.p99, 1)} | ${fmt(p.non2xx + a.non2xx)} |`,
      );
    }
  }
  for (const r of rows.filter((x) => x.skipped)) {
    lines.push("");
    lines.push(`${r.label}: skipped, ${r.skipped}.`);
  }
  for (const r of rows.filter((x) => x.calls)) {
    lines.push("");
    lines.push(
      `| ${r.label}: ${fmt(r.events)} events, ${fmt(r.payments)} payments (loaded in ${fmt(r.loadSeconds.events + r.loadSeconds.payments)} s) | p50 ms | max ms |`,
    );
    lines.push("|---|--:|--:|");
    for (const [method, c] of Object.entries(r.calls)) {
      lines.push(`| ${method} | ${fmt(c.p50Ms, 1)} | ${fmt(c.maxMs, 1)} |`);
    }
  }
  for (const r of rows.filter((x) => x.retention)) {
    const t = r.retention;
    lines.push("");
    lines.push(
      `| ${r.label} | rate/s | phases | p99 ms without prune (median of phases) | p99 ms during prune (median) | ratio | events pruned while measured |`,
    );
    lines.push("|---|--:|--:|--:|--:|--:|--:|");
    lines.push(
      `| per phase: ${t.keepP99s.map((x) => fmt(x, 1)).join(", ")} / ${t.pruneP99s.map((x) => fmt(x, 1)).join(", ")} ms | ${fmt(t.rate)} | ${t.phases}+${t.phases} | ${fmt(t.keepP99Ms, 1)} | ${fmt(t.pruneP99Ms, 1)} | ${fmt(t.ratio, 2)}× | ${fmt(t.prunedDuring)} |`,
    );
  }
  if (met.length > 0) {
    lines.push("");
    lines.push("| Target | measured | met |");
    lines.push("|---|--:|:-:|");
    for (const x of met) {
      lines.push(
        `| ${x.target} | ${x.value} | ${x.met === undefined ? "–" : x.met ? "yes" : "**no**"} |`,
      );
    }
  }
  const server = settings.serverEnv;
  lines.push("");
  lines.push(
    `${machine.cpuModel}, ${machine.cores} cores, ${machine.totalMemoryGb} GB, Node ${machine.node}; ` +
      `${settings.duration} s per phase after ${settings.warmup} s warm-up, ${settings.connections} connections (gRPC: ${settings.grpcConcurrency} calls in flight); ` +
      `INGEST_QUEUE_CAPACITY=${server.INGEST_QUEUE_CAPACITY}, INGEST_BATCH_MAX=${server.INGEST_BATCH_MAX}, INGEST_FLUSH_MS=${server.INGEST_FLUSH_MS}, INGEST_BATCHES_IN_FLIGHT=${server.INGEST_BATCHES_IN_FLIGHT}` +
      (workersRan ? "" : "; no WORKERS rows (the built server has no WORKERS setting)"),
  );
  return lines.join("\n");
}

/**
 * The content of bench/results/<stamp>.json (the admin token left out), with
 * the markdown table the run prints. `workersRan`: the WORKERS rows could run.
 */
export function resultDocument({ startedAt, machine, settings, rows, workersRan }) {
  const baselineRps = baselineRate(rows);
  const met = targets(rows, baselineRps);
  return {
    startedAt: startedAt.toISOString(),
    machine,
    settings: {
      durationSec: settings.duration,
      warmupSec: settings.warmup,
      connections: settings.connections,
      grpcConcurrency: settings.grpcConcurrency,
      server: { ...settings.serverEnv, ADMIN_TOKEN: undefined },
      cpuProfile: Boolean(settings.profDir),
    },
    baselineRequestsPerSec: baselineRps,
    targets: met,
    results: rows,
    table: renderTable({ rows, baselineRps, targets: met, machine, settings, workersRan }),
  };
}

/** The result file's name for a run started at `date`: its UTC time, `:` made `-`, no milliseconds. */
export function resultFileName(date) {
  return `${date
    .toISOString()
    .replace(/:/g, "-")
    .replace(/\.\d+Z$/, "Z")}.json`;
}
