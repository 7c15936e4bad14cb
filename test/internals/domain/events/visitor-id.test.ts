import { describe, expect, it } from "vitest";
import {
  canonicalIp,
  computeVisitorId,
  createVisitorIds,
  utcDay,
} from "../../../../src/domain/events/visitor-id.js";

describe("visitor id", () => {
  it("writes an IP one way", () => {
    expect(canonicalIp("203.0.113.9")).toBe("203.0.113.9");
    expect(canonicalIp("::ffff:203.0.113.9")).toBe("203.0.113.9");
    expect(canonicalIp("::FFFF:CB00:7109")).toBe("203.0.113.9");
    expect(canonicalIp("2001:0DB8:0000:0000:0000:0000:0000:0001")).toBe("2001:db8::1");
    expect(canonicalIp("bogus")).toBeUndefined();
  });

  it("is a keyed hash of site, ip and ua", () => {
    const id = computeVisitorId("salt", "site", "1.2.3.4", "ua");
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(computeVisitorId("salt", "site", "1.2.3.4", "ua")).toBe(id);
    expect(computeVisitorId("salt2", "site", "1.2.3.4", "ua")).not.toBe(id);
    expect(computeVisitorId("salt", "site2", "1.2.3.4", "ua")).not.toBe(id);
    expect(computeVisitorId("salt", "site", "1.2.3.5", "ua")).not.toBe(id);
    expect(computeVisitorId("salt", "site", "1.2.3.4", "ua2")).not.toBe(id);
  });

  it("shares each day's salt through the store (first writer wins) and rotates at UTC midnight", async () => {
    const salts = new Map<string, string>();
    let asked = 0;
    const store = {
      async ensureSalt(day: string, candidate: string) {
        asked++;
        if (!salts.has(day)) salts.set(day, candidate);
        return salts.get(day) as string;
      },
      async pruneSalts(day: string) {
        for (const d of salts.keys()) if (d < day) salts.delete(d);
      },
    };
    // Two processes, each making its own random candidates.
    const a = createVisitorIds(store);
    const b = createVisitorIds(store);
    const day1 = Date.UTC(2025, 2, 1, 23, 59, 59, 999);
    const day2 = day1 + 1;
    expect(utcDay(day1)).toBe("2025-03-01");
    expect(utcDay(day2)).toBe("2025-03-02");
    const a1 = await a.visitorId("s", "1.2.3.4", "ua", day1);
    expect(await b.visitorId("s", "1.2.3.4", "ua", day1)).toBe(a1);
    expect(await a.visitorId("s", "1.2.3.4", "ua", day1 - 3_600_000)).toBe(a1);
    const a2 = await a.visitorId("s", "1.2.3.4", "ua", day2);
    expect(a2).not.toBe(a1);
    expect(await b.visitorId("s", "1.2.3.4", "ua", day2)).toBe(a2);
    // The previous day's salt is still there: yesterday's late events keep yesterday's id.
    expect(await a.visitorId("s", "1.2.3.4", "ua", day1)).toBe(a1);
    expect(salts.size).toBe(2);
    expect(a1).toBe(computeVisitorId(salts.get("2025-03-01") as string, "s", "1.2.3.4", "ua"));
    // Cached per process and day: two processes × two days.
    expect(asked).toBe(4);
  });

  it("remembered ids are the computed ones, for every site, ip, ua and day", async () => {
    const salts = new Map<string, string>();
    const store = {
      async ensureSalt(day: string, candidate: string) {
        if (!salts.has(day)) salts.set(day, candidate);
        return salts.get(day) as string;
      },
      async pruneSalts() {},
    };
    const ids = createVisitorIds(store);
    const t0 = Date.UTC(2025, 4, 1, 12);
    const seen = new Set<string>();
    // Twice over: the second pass is answered from memory and must agree.
    for (let pass = 0; pass < 2; pass += 1) {
      for (const at of [t0, t0 + 86_400_000, t0 - 86_400_000, t0 + 3_600_000]) {
        for (const site of ["s1", "s2"]) {
          for (const ip of ["1.2.3.4", "1.2.3.5", "2001:db8::1"]) {
            for (const ua of ["a", "b"]) {
              const id = await ids.visitorId(site, ip, ua, at);
              const salt = salts.get(utcDay(at)) as string;
              expect(id).toBe(computeVisitorId(salt, site, ip, ua));
              if (pass === 0 && at !== t0 + 3_600_000) seen.add(id);
            }
          }
        }
      }
    }
    expect(seen.size).toBe(3 * 2 * 3 * 2);
  });

  it("deletes salts older than the previous day once a new day's salt exists", async () => {
    const salts = new Map<string, string>([
      ["2025-02-27", "old"],
      ["2025-02-28", "older than yesterday"],
      ["2025-03-01", "yesterday"],
    ]);
    const store = {
      async ensureSalt(day: string, candidate: string) {
        if (!salts.has(day)) salts.set(day, candidate);
        return salts.get(day) as string;
      },
      async pruneSalts(day: string) {
        for (const d of salts.keys()) if (d < day) salts.delete(d);
      },
    };
    await createVisitorIds(store).visitorId("s", "1.2.3.4", "ua", Date.UTC(2025, 2, 2, 8));
    await new Promise((r) => setTimeout(r, 10));
    expect([...salts.keys()].sort()).toEqual(["2025-03-01", "2025-03-02"]);
  });
});
