import { describe, expect, it } from "vitest";
import {
  customerVisitorIds,
  joinStitchedVisitors,
} from "../../../../src/domain/attribution/stitched-visitors.js";
import type { LinkKind, VisitorStitch, VisitorTouch } from "../../../../src/store/port.js";

const SITE = "site_1";
const D1 = "11111111111111111111111111111111";
const D2 = "22222222222222222222222222222222";
const D3 = "33333333333333333333333333333333";
const P = "p:Kq3_x-Y7aB9cD0eFgH1iJ2";

/** A store holding `stitches`, answering findStitches as the port says, counting reads. */
function storeOf(stitches: VisitorStitch[]) {
  const reads: string[][] = [];
  return {
    reads,
    async findStitches(siteId: string, ids: string[]) {
      reads.push(ids);
      return stitches.filter(
        (s) => s.siteId === siteId && (ids.includes(s.visitorId) || ids.includes(s.persistentId)),
      );
    },
  };
}

const stitch = (visitorId: string, persistentId: string): VisitorStitch => ({
  siteId: SITE,
  visitorId,
  persistentId,
  ts: 0,
});

describe("joining stitched visitors for attribution", () => {
  it("brings a daily id's persistent id and that one's other daily ids, with the same link, in two reads", async () => {
    const store = storeOf([stitch(D1, P), stitch(D2, P), stitch(D3, "p:other_visitor_000")]);
    const links = new Map<string, LinkKind>([[D1, "user_id"]]);
    expect(await joinStitchedVisitors(store, SITE, links)).toEqual([P, D2]);
    expect([...links]).toEqual([
      [D1, "user_id"],
      [P, "user_id"],
      [D2, "user_id"],
    ]);
    expect(store.reads).toEqual([[D1], [P]]);
  });

  it("brings a persistent id's daily ids in one read and keeps the strongest link of a visitor", async () => {
    const store = storeOf([stitch(D1, P), stitch(D2, P)]);
    const links = new Map<string, LinkKind>([
      [D2, "customer"],
      [P, "visitor_id"],
    ]);
    expect(await joinStitchedVisitors(store, SITE, links)).toEqual([D1]);
    expect(Object.fromEntries(links)).toEqual({
      [D1]: "visitor_id",
      [D2]: "visitor_id",
      [P]: "visitor_id",
    });
    expect(store.reads).toHaveLength(1);
  });

  it("reads nothing for a customer without links, and adds nothing without stitches", async () => {
    const store = storeOf([]);
    expect(await joinStitchedVisitors(store, SITE, new Map())).toEqual([]);
    expect(store.reads).toEqual([]);
    const links = new Map<string, LinkKind>([[D1, "visitor_id"]]);
    expect(await joinStitchedVisitors(store, SITE, links)).toEqual([]);
    expect([...links.keys()]).toEqual([D1]);
  });
});

describe("customer.visitor_id", () => {
  const touch = (visitorId: string): VisitorTouch => ({
    siteId: SITE,
    visitorId,
    ts: 0,
    internal: false,
    channel: "Email",
    landingPage: "https://shop.test/",
  });
  const touchesOf = (known: string[]) => ({
    async getFirstTouches(_site: string, ids: string[]) {
      return ids.filter((id) => known.includes(id)).map(touch);
    },
  });

  it("names the persistent visitor of a vid, and a daily id as such", async () => {
    const none = touchesOf([]);
    expect(await customerVisitorIds(none, SITE, "Kq3_x-Y7aB9cD0eFgH1iJ2")).toEqual([P]);
    expect(await customerVisitorIds(none, SITE, P)).toEqual([P]);
    expect(await customerVisitorIds(none, SITE, undefined)).toEqual([]);
  });

  it("takes a 32-hex value as the daily id, and as the persistent id once that visitor has a touch", async () => {
    expect(await customerVisitorIds(touchesOf([]), SITE, D1)).toEqual([D1]);
    expect(await customerVisitorIds(touchesOf([`p:${D1}`]), SITE, D1)).toEqual([D1, `p:${D1}`]);
  });
});
