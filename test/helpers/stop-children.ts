/**
 * Vitest setup file: after each test file, every process tree it started
 * and did not stop is killed (test/helpers/child-processes.ts), whatever
 * the file's outcome. The global teardown (leaked-processes.ts) then finds
 * nothing left; if it does, the run fails.
 */
import { afterAll } from "vitest";
import { killAllStarted } from "./child-processes.js";

afterAll(() => killAllStarted());
