/**
 * Finding many fixed strings in a text at once (Aho–Corasick): for each position of the text, the
 * longest of the strings that ends there, in one pass over the text whatever the strings have in
 * common. Redaction carries the lines of an event's secrets into its other strings (redact.ts).
 */

/** A matcher over `needles`: `scan(text, found)` calls `found(start, end, needle)` with the longest needle ending at each end (exclusive), ends rising. */
export interface NeedleMatcher {
  scan(text: string, found: (start: number, end: number, needle: number) => void): void
}

/** Children a trie node lists before it keeps them hashed. */
const WIDE_CHILDREN = 16

export function needleMatcher(needles: readonly string[]): NeedleMatcher {
  // the trie in typed arrays (one slot per needle character at most): nodes' children as sibling
  // lists, the root's by code unit; a Map of edges took 5.5 s to build over 1 MB of key lines
  const capacity = 1 + needles.reduce((sum, needle) => sum + needle.length, 0)
  const unit = new Uint16Array(capacity)
  const firstChild = new Int32Array(capacity).fill(-1)
  const sibling = new Int32Array(capacity).fill(-1)
  const depth = new Int32Array(capacity)
  /** The needle ending at a node (the first given when two are equal), or -1. */
  const ends = new Int32Array(capacity).fill(-1)
  const rootChild = new Int32Array(0x10000).fill(-1)
  // a node of many children (thousands of needles alike up to one character) finds them hashed:
  // a sibling list would be walked at every visit
  const children = new Int32Array(capacity)
  const wide = new Map<number, number>()
  let nodes = 1
  const child = (node: number, code: number): number => {
    if (node === 0) return rootChild[code]!
    if (children[node]! > WIDE_CHILDREN) return wide.get(node * 0x10000 + code) ?? -1
    for (let at = firstChild[node]!; at !== -1; at = sibling[at]!) if (unit[at] === code) return at
    return -1
  }
  needles.forEach((needle, index) => {
    let node = 0
    for (let at = 0; at < needle.length; at += 1) {
      const code = needle.charCodeAt(at)
      let next = child(node, code)
      if (next === -1) {
        next = nodes++
        unit[next] = code
        depth[next] = depth[node]! + 1
        sibling[next] = firstChild[node]!
        firstChild[node] = next
        children[node] = children[node]! + 1
        if (node === 0) rootChild[code] = next
        else if (children[node] === WIDE_CHILDREN + 1) for (let kin = next; kin !== -1; kin = sibling[kin]!) wide.set(node * 0x10000 + unit[kin]!, kin)
        else if (children[node]! > WIDE_CHILDREN) wide.set(node * 0x10000 + code, next)
      }
      node = next
    }
    if (ends[node] === -1) ends[node] = index
  })
  // fail links (the longest proper suffix that is a trie node) and, per node, the deepest node
  // among itself and its suffixes that ends a needle: worked out breadth first (shallower first)
  const fail = new Int32Array(nodes)
  const longest = new Int32Array(nodes).fill(-1)
  const queue = new Int32Array(nodes)
  let tail = 1
  for (let head = 0; head < tail; head += 1) {
    const node = queue[head]!
    for (let next = firstChild[node]!; next !== -1; next = sibling[next]!) {
      let target = -1
      if (node !== 0) {
        for (let link = fail[node]!; ; link = fail[link]!) {
          target = child(link, unit[next]!)
          if (target !== -1 || link === 0) break
        }
      }
      fail[next] = target === -1 ? 0 : target
      longest[next] = ends[next] !== -1 ? next : longest[fail[next]!]!
      queue[tail++] = next
    }
  }
  return {
    scan(text, found) {
      let state = 0
      for (let at = 0; at < text.length; at += 1) {
        const code = text.charCodeAt(at)
        let next = child(state, code)
        while (next === -1 && state !== 0) {
          state = fail[state]!
          next = child(state, code)
        }
        state = next === -1 ? 0 : next
        const match = longest[state]!
        if (match !== -1) found(at + 1 - depth[match]!, at + 1, ends[match]!)
      }
    },
  }
}
