/** Vitest global set-up: bundle the tracking script and the dashboard, as `npm run build` does, before any server starts. */
import { buildDashboard } from "../../dashboard/build.js";
import { buildTracker } from "../../tracker/build.js";

export default async function setup(): Promise<void> {
  await Promise.all([buildTracker(), buildDashboard()]);
}
