/**
 * Retention of raw events: a per-site number of days (`events_retention_days`,
 * default: keep), and the background pruner that removes a site's events
 * older than that in small steps. What is pruned and what is kept, and why:
 * docs/privacy.md; settings and behaviour: docs/operations.md.
 *
 * Only raw events go. First touches, identify links, stitches, customers,
 * payments and quota counters stay: attribution credits a payment to the
 * first touch stored when the visitor first came, not to the events, so a
 * payment made after the pruning is credited as before.
 */

import type { StoredEventReads } from "./analytics/event-reads.js";
import type { Clock } from "./clock.js";
import { errors } from "./errors.js";
import type { Store } from "./store/store.js";
import { MAX_RETENTION_DAYS } from "./vocabulary.js";

const DAY_MS = 86_400_000;

/** A site's retention as set: days, or undefined when it keeps its events. */
export interface SiteRetention {
  siteId: string;
  eventsRetentionDays: number | undefined;
}

/** The message of a retention that is not a whole number of days in range. */
export const RETENTION_DAYS_MESSAGE = `days must be a whole number from 1 to ${MAX_RETENTION_DAYS}, or 0 to keep every event`;

/** Setting a site's retention: one function for AdminService and the admin CLI. */
export function createRetention(deps: { store: Pick<Store, "setEventsRetention"> }) {
  const { store } = deps;
  return {
    /**
     * Sets a site's retention to `days` (1 to MAX_RETENTION_DAYS), or back to
     * keeping every event with 0. An operator setting, like the plan: behind
     * ADMIN_TOKEN (AdminService) or the store's own access (CLI), no actor.
     */
    async setSiteRetention(input: { siteId: string; days: number }): Promise<SiteRetention> {
      const { siteId, days } = input;
      if (!siteId) throw errors.invalid("site_id is required");
      if (!Number.isSafeInteger(days) || days < 0 || days > MAX_RETENTION_DAYS) {
        throw errors.invalid(RETENTION_DAYS_MESSAGE);
      }
      const kept = days === 0 ? undefined : days;
      if (!(await store.setEventsRetention(siteId, kept))) throw errors.siteNotFound(siteId);
      return { siteId, eventsRetentionDays: kept };
    },
  };
}

export type Retention = ReturnType<typeof createRetention>;

/**
 * The first instant kept under a retention of `days`: the start of today's
 * UTC day, `days` days back. Events with a `ts` before it are pruned.
 */
export function retentionHorizon(now: number, days: number): number {
  return Math.floor(now / DAY_MS) * DAY_MS - days * DAY_MS;
}

/** What one pass did for one site. */
export interface SitePrune {
  siteId: string;
  days: number;
  horizon: number;
  /** Events removed. */
  pruned: number;
  steps: number;
  /** False when a step failed or the pruner was stopped: the next pass goes on. */
  complete: boolean;
}

/** Where the pruner reports: one info line per site pass, a warning per failed step. */
export interface PrunerLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface PrunerOptions {
  store: Pick<Store, "listEventsRetention" | "pruneEventsStep">;
  clock: Clock;
  log: PrunerLog;
  /** Time between passes (ms); the first pass starts one interval after `start()`. */
  intervalMs: number;
  /** Most events removed by one step (one short store transaction). */
  stepEvents: number;
  /** Least pause between two steps (ms); the pause is also at least PAUSE_FACTOR × the step's time. */
  stepPauseMs: number;
  /** Told of the events each step removed (metrics). */
  onPruned?: (count: number) => void;
  /**
   * Counts the events the store no longer holds (the engine's, on SQLite:
   * analytics/event-reads.ts). The first step logs their removal for the
   * engine; the steps then only clear the store's outbox, whose rows the
   * engine already counted (it caught up first), so their counts are not added.
   */
  countEvents?: StoredEventReads["countEvents"];
  /** Waits `ms` (tests count and skip the waits); resolves early when `signal` aborts. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Monotonic milliseconds, to time steps; performance.now by default. */
  elapsed?: () => number;
}

/**
 * A step's pause is at least this many times the step's own duration, so
 * the pruner never takes more than a fifth of the event loop (and of the
 * store's write lock): a busy store makes steps slower and the pauses longer
 * with them, and ingestion runs in between.
 */
export const PAUSE_FACTOR = 4;

function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * The background pruner. `start()` runs a pass every `intervalMs`;
 * `runOnce()` runs one now (tests, and the timer); `stop()` ends the
 * current pass between two steps and waits for it. A failing step is
 * logged and the site is tried again at the next pass; nothing it throws
 * leaves the pruner. A site's pass that completed for a horizon is not
 * run again until the horizon moves (the next UTC day, or a changed
 * retention): the API never stores an event more than an hour old, so
 * nothing before the horizon can arrive afterwards.
 */
export function createRetentionPruner(options: PrunerOptions) {
  const { store, clock, log, intervalMs, stepEvents, stepPauseMs, onPruned, countEvents } = options;
  const sleep = options.sleep ?? defaultSleep;
  const elapsed = options.elapsed ?? (() => performance.now());
  const stopping = new AbortController();
  /** The horizon each site's last complete pass reached. */
  const finished = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<SitePrune[]> | undefined;

  async function pruneSite(siteId: string, days: number, horizon: number): Promise<SitePrune> {
    const result: SitePrune = {
      siteId,
      days,
      horizon,
      pruned: 0,
      steps: 0,
      complete: false,
    };
    let cursor: string | undefined;
    try {
      const moved = countEvents ? await countEvents(siteId, { before: horizon }) : 0;
      result.pruned += moved;
      if (moved > 0) onPruned?.(moved);
      do {
        const started = elapsed();
        const step = await store.pruneEventsStep(siteId, horizon, stepEvents, cursor);
        result.steps += 1;
        if (!countEvents) {
          result.pruned += step.removed;
          if (step.removed > 0) onPruned?.(step.removed);
        }
        cursor = step.cursor;
        // Always a pause, on a timer: ingestion's requests and commits run in between.
        await sleep(Math.max(stepPauseMs, (elapsed() - started) * PAUSE_FACTOR), stopping.signal);
      } while (cursor !== undefined && !stopping.signal.aborted);
      result.complete = cursor === undefined;
    } catch (err) {
      log.warn(
        { site_id: siteId, events_pruned: result.pruned, err: (err as Error)?.name ?? "Error" },
        "pruning events failed; retried at the next pass",
      );
    }
    if (result.complete) finished.set(siteId, horizon);
    log.info(
      {
        site_id: siteId,
        events_retention_days: days,
        horizon: new Date(horizon).toISOString(),
        events_pruned: result.pruned,
        steps: result.steps,
        complete: result.complete,
      },
      "events pruned",
    );
    return result;
  }

  async function pass(): Promise<SitePrune[]> {
    const done: SitePrune[] = [];
    let sites: Awaited<ReturnType<typeof store.listEventsRetention>>;
    try {
      sites = await store.listEventsRetention();
    } catch (err) {
      log.warn(
        { err: (err as Error)?.name ?? "Error" },
        "pruning events failed; retried at the next pass",
      );
      return done;
    }
    for (const { siteId, days } of sites) {
      if (stopping.signal.aborted) break;
      const horizon = retentionHorizon(clock.now(), days);
      if (finished.get(siteId) === horizon) continue;
      done.push(await pruneSite(siteId, days, horizon));
    }
    return done;
  }

  function schedule(): void {
    if (stopping.signal.aborted) return;
    timer = setTimeout(() => {
      void pruner.runOnce().finally(schedule);
    }, intervalMs);
    // The pruner alone never keeps the process alive.
    timer.unref();
  }

  const pruner = {
    /** Runs one pass now (or joins the one running); resolves with what each site's pass did. */
    runOnce(): Promise<SitePrune[]> {
      if (stopping.signal.aborted) return Promise.resolve([]);
      running ??= pass().finally(() => {
        running = undefined;
      });
      return running;
    },
    /** Runs a pass every `intervalMs` until `stop()`. */
    start(): void {
      if (timer === undefined) schedule();
    },
    /** Stops the timer and the pass in progress (between two steps), and waits for it. */
    async stop(): Promise<void> {
      stopping.abort();
      clearTimeout(timer);
      await running;
    },
  };
  return pruner;
}

export type RetentionPruner = ReturnType<typeof createRetentionPruner>;
