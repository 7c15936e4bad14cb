import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Bundles the tracking script into dist/tracker/ first: the server serves it from there.
    globalSetup: ["test/helpers/build-tracker.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration suites start servers and child processes: keep files in parallel but bounded.
    maxWorkers: 2,
  },
});
