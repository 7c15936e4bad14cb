import { defineConfig } from "vitest/config";
import { BASE_TIMEOUTS, scaled } from "./test/helpers/timeouts.js";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Bundles the tracking script into dist/tracker/ first: the server serves it from there.
    // Then the run's pid directory: a process the suite started and left running fails the run.
    globalSetup: ["test/helpers/build-tracker.ts", "test/helpers/leaked-processes.ts"],
    // After each file: what it started and left running is killed.
    setupFiles: ["test/helpers/stop-children.ts"],
    // From test/helpers/timeouts.ts: scaled to the machine's load when the run starts.
    testTimeout: scaled(BASE_TIMEOUTS.test),
    hookTimeout: scaled(BASE_TIMEOUTS.hook),
    // Integration suites start servers and child processes: keep files in parallel but bounded.
    maxWorkers: 2,
  },
});
