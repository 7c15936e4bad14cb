/**
 * Every timeout of the suite, in one place, scaled to the machine: on a
 * loaded machine (load average above the number of CPUs) a child process
 * takes longer to start and a CLI longer to answer, so every wait grows with
 * `loadavg / cpus` (the larger of the 1- and 5-minute averages; at least 1,
 * at most 8), or by TEST_TIMEOUT_SCALE when it
 * is set. The waits themselves end on an explicit signal (readiness, exit);
 * these bound them, so a signal that never comes fails loudly instead of
 * hanging the run.
 */
import { availableParallelism, loadavg } from "node:os";

/** The factor every timeout is multiplied by, read again at each call. */
export function timeoutScale(): number {
  const forced = Number(process.env.TEST_TIMEOUT_SCALE);
  if (Number.isFinite(forced) && forced > 0) return forced;
  // The 1-minute average trails a load that just arrived; the 5-minute one
  // trails one that just left: the larger of the two errs on the long side.
  const [one = 0, five = 0] = loadavg();
  const load = Math.max(one, five);
  return Math.min(8, Math.max(1, load / availableParallelism()));
}

/** `ms` on an idle machine, scaled to this one. */
export function scaled(ms: number): number {
  return Math.round(ms * timeoutScale());
}

/** The unscaled bases, in ms. */
export const BASE_TIMEOUTS = {
  /** A test (vitest's testTimeout). */
  test: 30_000,
  /** A hook (vitest's hookTimeout): servers and seeds start there. */
  hook: 60_000,
  /** A child server to answer /readyz, or to print what a test waits for. */
  childReady: 30_000,
  /** A child server to exit after SIGTERM before it is killed. */
  childStop: 15_000,
  /** One admin CLI or `npm run` command. */
  cli: 60_000,
} as const;

/** The scaled timeouts, as of now. */
export function timeouts(): Record<keyof typeof BASE_TIMEOUTS, number> {
  const s = timeoutScale();
  return {
    test: Math.round(BASE_TIMEOUTS.test * s),
    hook: Math.round(BASE_TIMEOUTS.hook * s),
    childReady: Math.round(BASE_TIMEOUTS.childReady * s),
    childStop: Math.round(BASE_TIMEOUTS.childStop * s),
    cli: Math.round(BASE_TIMEOUTS.cli * s),
  };
}
