/**
 * Cutting text by UTF-16 index without splitting a character: an astral character (emoji, CJK
 * extension B) is a surrogate pair, and half of one is a lone surrogate a provider may refuse.
 */

/** `index`, or one less when it falls between the two halves of a surrogate pair. */
export function safeCut(text: string, index: number): number {
  if (index <= 0 || index >= text.length) return index
  const before = text.charCodeAt(index - 1)
  const at = text.charCodeAt(index)
  return before >= 0xd800 && before <= 0xdbff && at >= 0xdc00 && at <= 0xdfff ? index - 1 : index
}

/** The first `length` code units of `text`, one fewer when the last would be half a character. */
export function cutPrefix(text: string, length: number): string {
  return text.slice(0, safeCut(text, length))
}
