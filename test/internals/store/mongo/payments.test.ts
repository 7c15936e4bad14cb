/**
 * The MongoDB adapter's payment writes without a server: its real code
 * (createMongoPayments) over collections that apply each upsert as the
 * server documents it ($set always, $setOnInsert only when the upsert
 * inserts, $unset), checked against the domain's patch functions by the
 * same property the store contract runs on a live server.
 */
import { describe, it } from "vitest";
import { createMongoPayments } from "../../../../src/store/mongo/payments.js";
import type { Collections } from "../../../../src/store/mongo/schema.js";
import { checkPatchesProperty } from "../../../helpers/patches-property.js";

type Doc = Record<string, unknown>;

/** A collection of documents keyed by their upsert filter's equalities. */
function modelCollection() {
  const docs = new Map<string, Doc>();
  const keyOf = (filter: Doc) => JSON.stringify(Object.entries(filter).sort());
  return {
    async bulkWrite(
      operations: { updateOne: { filter: Doc; update: Record<string, Doc>; upsert?: boolean } }[],
    ) {
      for (const { updateOne } of operations) {
        const key = keyOf(updateOne.filter);
        const existing = docs.get(key);
        if (!existing && !updateOne.upsert) continue;
        const doc: Doc = existing ? { ...existing } : { ...updateOne.filter };
        const {
          $set = {},
          $setOnInsert = {},
          $unset = {},
          $currentDate = {},
          ...other
        } = updateOne.update;
        if (Object.keys(other).length > 0) throw new Error(`not modelled: ${Object.keys(other)}`);
        for (const k of Object.keys($set)) {
          if (k in $setOnInsert) throw new Error(`conflict on ${k}`);
        }
        Object.assign(doc, $set);
        if (!existing) Object.assign(doc, $setOnInsert);
        for (const k of Object.keys($unset)) delete doc[k];
        // The server's clock (the analytics feed's marker): the model's is the epoch.
        for (const k of Object.keys($currentDate)) doc[k] = new Date(0);
        docs.set(key, doc);
      }
      return {};
    },
    async findOne(filter: Doc) {
      return docs.get(keyOf(filter)) ?? null;
    },
  };
}

describe("mongodb payments without a server", () => {
  it("customer and subscription patches leave what the domain's patch functions say (property)", async () => {
    const c = {
      customers: modelCollection(),
      subscriptions: modelCollection(),
      payments: modelCollection(),
    } as unknown as Collections;
    await checkPatchesProperty(createMongoPayments(c), "site_1", 200);
  });
});
