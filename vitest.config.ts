import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Integration suites start servers and child processes: keep files in parallel but bounded.
    maxWorkers: 2,
  },
});
