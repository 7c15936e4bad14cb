/**
 * Preloaded (`node --import`) into child servers by child-server.ts: the
 * process's wall clock starts at TEST_CLOCK_START_MS and then runs at real
 * speed, so tests of real processes give the same answers at any hour, as the
 * in-process servers' injected clock does. Only `Date` changes: timers and
 * performance.now() keep the monotonic clock.
 */
import { performance } from "node:perf_hooks";

const start = Number(process.env.TEST_CLOCK_START_MS);
if (Number.isFinite(start)) {
  const origin = performance.now();
  const now = () => Math.floor(start + performance.now() - origin);
  const RealDate = Date;
  class FixedStartDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(now());
      else super(...args);
    }
    static now() {
      return now();
    }
  }
  globalThis.Date = FixedStartDate;
}
