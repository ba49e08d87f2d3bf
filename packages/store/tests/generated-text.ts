/**
 * Generated texts for the scan's equivalence tests (the fast scan against the token walk, the
 * resident index's counts against the scan): words a stemmer rewrites, camelCase, punctuation,
 * non-ASCII around them. Deterministic: the same corpus on every run.
 */

/** Deterministic generator (a 32-bit LCG, Numerical Recipes constants): the corpus is the same on every run. */
export function random(seed: number): () => number {
  let state = seed >>> 0
  return () => (state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0) / 4_294_967_296
}

export const STEMS = ['connect', 'retry', 'happy', 'ay', 'toy', 'key', 'ey', 'valency', 'relational', 'possibility', 'pool', 'deprecate', 'idempotent', 'migrate', 'hop', 'cry', 'ties', 'db', 'timeout', 'refund', 'payment', 'lease', 'a', 'i', 'x1', '42', 'user', 'name']
export const SUFFIXES = ['', 's', 'es', 'ed', 'ing', 'ion', 'ions', 'ly', 'ness', 'ful', 'ational', 'izer', 'ization', 'ies', 'y', 'er', 'able']
export const GLUE = [' ', ' ', ' ', '\n', '. ', ', ', '/', '_', '-', '.', '(', ') ', ': ', '"', '==', '\t']

export function word(next: () => number): string {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!
  const base = pick(STEMS) + pick(SUFFIXES)
  const roll = next()
  if (roll < 0.15) return base[0]!.toUpperCase() + base.slice(1)
  if (roll < 0.3) return `get${base[0]!.toUpperCase()}${base.slice(1)}${pick(['Name', 'ID', 'Pool', '', 'Retries'])}`
  if (roll < 0.35) return base.toUpperCase()
  if (roll < 0.37) return `${base}é`
  if (roll < 0.38) return `${base}连接`
  return base
}

export function generatedText(next: () => number): string {
  const parts: string[] = []
  const length = 1 + Math.floor(next() * 60)
  for (let index = 0; index < length; index += 1) parts.push(word(next), GLUE[Math.floor(next() * GLUE.length)]!)
  if (next() < 0.1) parts.push('[tool call shell] {"cmd":"retry the pool"}')
  return parts.join('')
}

/** A random code point of one of the blocks (each block equally likely). */
export function pointsOf(blocks: ReadonlyArray<readonly [number, number]>, next: () => number): () => string {
  return () => {
    const [from, to] = blocks[Math.floor(next() * blocks.length)]!
    return String.fromCodePoint(from + Math.floor(next() * (to - from + 1)))
  }
}

