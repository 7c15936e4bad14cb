/** Vitest global set-up: bundle the tracking script, as `npm run build` does, before any server starts. */
import { buildTracker } from "../../tracker/build.js";

export default async function setup(): Promise<void> {
  await buildTracker();
}
