/**
 * Cutting text by UTF-16 index without splitting a character: an astral character (emoji, CJK
 * extension B) is a surrogate pair, and half of one is a lone surrogate a provider may refuse.
 * The boundary rule is the store's (`charBoundary`), which cuts passages and snippets the same way.
 */
import { charBoundary } from '@dsh-shadow/store'

/** The first `length` code units of `text`, one fewer when the last would be half a character. */
export function cutPrefix(text: string, length: number): string {
  return text.slice(0, charBoundary(text, length))
}

/** Whitespace runs as one space, trimmed: a line of a digest or stub. */
export function flatten(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}

/** Characters of input `clip` flattens per character it keeps, before it falls back to all of it. */
const CLIP_WINDOW = 8

/** `text` flattened, cut to `max` characters with "…" when longer. */
export function clip(text: string, max: number): string {
  // flatten a prefix first: a 20 MB message is not rewritten whole (seconds) to quote its first line
  const window = Math.max(64, max * CLIP_WINDOW)
  if (text.length > window) {
    const head = flatten(cutPrefix(text, window))
    // the head flattened past max: the whole text would be cut at the same place
    if (head.length > max) return `${cutPrefix(head, Math.max(1, max - 1))}…`
  }
  const flat = flatten(text)
  return flat.length <= max ? flat : `${cutPrefix(flat, Math.max(1, max - 1))}…`
}
