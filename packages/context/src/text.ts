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

/** `text` flattened, cut to `max` characters with "…" when longer. */
export function clip(text: string, max: number): string {
  const flat = flatten(text)
  return flat.length <= max ? flat : `${cutPrefix(flat, Math.max(1, max - 1))}…`
}
