/**
 * The store port lives in the domain (src/domain/store/, one interface per
 * part, and src/domain/vocabulary.ts); this module re-exports it for the
 * adapters, which depend on the domain, never the reverse.
 */
export { LINK_KINDS, linkRank } from "../domain/attribution/ranking.js";
export * from "../domain/store/store.js";
