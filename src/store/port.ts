/**
 * The store port lives in the domain (src/domain/store/, one interface per
 * part, the words they share in src/domain/vocabulary.ts, the ranking rules
 * in src/domain/attribution/ranking.ts); this module re-exports it for the
 * code outside the domain (the adapters, the guard, the doors and the
 * wiring), which depends on the domain, never the reverse.
 */
export { LINK_KINDS, linkRank } from "../domain/attribution/ranking.js";
export * from "../domain/store/store.js";
