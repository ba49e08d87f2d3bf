/**
 * What the resident memory estimate (session-index.ts `bytes`, the registry's budget) takes each
 * part of an index to cost, measured with process.memoryUsage() on sessions of prose, paths,
 * numbers, dates, CJK and tool calls (Node 22, x64): a row (its object and field strings, its
 * event's and tokens' typed arrays, its columns), a list entry (a doc and a count in two arrays), a key (its map entry, lists and slots), an anchor (its string's
 * map entry and doc list) and a trigram entry, a piece the cache holds. Text is counted at its size
 * as V8 holds it (one or two bytes a character); typed arrays (a doc's packed tokens) at their size.
 */
export const ROW_BYTES = 700
export const ENTRY_BYTES = 16
export const KEY_BYTES = 150
export const ANCHOR_BYTES = 150
/** An anchor's entry in a trigram's list: one 8-byte slot and the room a list grows by (~1.25x). */
export const GRAM_BYTES = 10
export const PIECE_BYTES = 120
/** A Map entry of numbers, and a Map of a few (the one-pass build's CJK ids by code point). */
export const MAP_ENTRY_BYTES = 40
export const MAP_BYTES = 200
/** A pointer in an array. */
export const SLOT_BYTES = 8
/** An index before its first row: its columns, maps and arrays at their first sizes (the build's tables counted apart). */
export const INDEX_BYTES = 12_000

/** A string V8 cannot hold at one byte a character. */
const TWO_BYTE = /[\u0100-\uffff]/

/** Bytes V8 takes for a string's characters. */
export function stringBytes(text: string): number {
  return TWO_BYTE.test(text) ? text.length * 2 : text.length
}
