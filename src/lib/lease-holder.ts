/**
 * Holder ids of the analytics owner's lease (src/domain/store/analytics-lease-port.ts):
 * `host:pid:random`, so that a server can tell a holder of its own host whose
 * process is gone (a kill -9, a crash) and take the lease over at once
 * instead of waiting for it to lapse.
 */
import { hostname } from "node:os";

/** A new holder id for this process. */
export function newHolderId(): string {
  return `${hostname()}:${process.pid}:${Math.floor(Math.random() * 2 ** 32).toString(16)}`;
}

/** Whether a holder id names a process of this host that no longer runs. */
export function isGoneHere(holderId: string): boolean {
  const [host, pid] = holderId.split(":");
  if (host !== hostname() || !pid || !/^\d+$/.test(pid) || Number(pid) === process.pid) {
    return false;
  }
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}
