/** Whether a promise has settled yet, for tests that hold a write back and check nothing was answered. */

/** Whether `p` settled within a few turns of the event loop. */
export async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  return done;
}
