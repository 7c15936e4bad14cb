/**
 * Vitest setup file: each file's time limits scaled to the load as it
 * starts (test/helpers/timeouts.ts); after each test file, every process tree it started
 * and did not stop is killed (test/helpers/child-processes.ts), whatever
 * the file's outcome. The global teardown (leaked-processes.ts) then finds
 * nothing left; if it does, the run fails.
 */
import { afterAll, vi } from "vitest";
import { killAllStarted } from "./child-processes.js";
import { BASE_TIMEOUTS, scaled } from "./timeouts.js";

// The config's limits were scaled to the load when the run began; a run that
// other work joins later (a build, another suite) gets limits scaled again as
// each file starts.
vi.setConfig({ testTimeout: scaled(BASE_TIMEOUTS.test), hookTimeout: scaled(BASE_TIMEOUTS.hook) });

afterAll(() => killAllStarted());
