/**
 * A cut row's tail: the part of its text past what a light read gives (backend.ts
 * CANDIDATE_TEXT_CHARS) that the index lists still hold (analyzer.ts MAX_INDEXED_CHARS). A session
 * index lists its keys, anchors and CJK runs so such a row is found by a word only its tail holds
 * (session-index.ts `listTail`); here is where a tail starts and how it is cut into pieces.
 */
import { charBoundary, MAX_INDEXED_CHARS } from '../analyzer.ts'
import { RUN_CHARS } from '../scripts.ts'

/** A word the light read's cut split is listed whole from its start, up to this far back. */
export const SPLIT_WORD_CHARS = 256

/**
 * The part of a row's full text a light read cut (`cutAt`: the light text's length) that the index
 * lists still hold, from the start of the word the cut split; undefined when the light read did not cut it.
 */
export function textTail(full: string, cutAt: number): string | undefined {
  const end = Math.min(full.length, MAX_INDEXED_CHARS)
  if (cutAt >= end) return undefined
  // the word (or anchor) the cut split is listed whole, from its start; never from inside a surrogate pair
  const before = full.slice(Math.max(0, cutAt - SPLIT_WORD_CHARS), cutAt)
  return full.slice(charBoundary(full, cutAt - (WORD_END.exec(before)?.[0].length ?? 0)), end)
}

/**
 * Pieces of `text` of at most `size` characters, each ended at a space where it has one past
 * SPLIT_WORD_CHARS, else overlapping the next by SPLIT_WORD_CHARS (a CJK pair or run across the
 * end is whole in the next); never split inside a surrogate pair.
 */
export function tailPieces(text: string, size: number): string[] {
  if (text.length <= size) return [text]
  const pieces: string[] = []
  for (let from = 0; from < text.length;) {
    let to = Math.min(text.length, from + size)
    let next = to
    if (to < text.length) {
      const space = text.lastIndexOf(' ', to)
      if (space > from + SPLIT_WORD_CHARS) next = to = space
      else {
        to = charBoundary(text, to)
        next = charBoundary(text, to - SPLIT_WORD_CHARS)
      }
    }
    pieces.push(text.slice(from, to))
    from = next
  }
  return pieces
}

/** A folded piece's runs of CJK letters, each ended by a NUL ('' when it has none of two or more characters). */
export function cjkRuns(folded: string): string {
  const runs = folded.toLowerCase().replace(NOT_CJK, '\0')
  return runs.length > 1 ? runs + '\0' : ''
}

/** The run of word and anchor characters (marks, astral letters too) that ends a string. */
const WORD_END = /[\p{L}\p{M}\p{N}_$./\\:-]+$/u
/** What is not a CJK letter (terms.ts CJK_CHAR), in runs. */
const NOT_CJK = new RegExp(`[^${RUN_CHARS}]+`, 'gv')
