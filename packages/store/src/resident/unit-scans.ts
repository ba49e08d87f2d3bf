/**
 * What a resident search scans (resident/engine.ts): the counts the term lists cannot give, and
 * the scans and values of the units the policy reads (value statements, passages), from stored
 * tokens where they speak for the text.
 */
import { isCjkTerm, MAX_POSITIONS, RANK_TEXT_CHARS, scanTerms, type TermScan } from '../search/passage.ts'
import type { RankedUnit } from '../search/rank.ts'
import { messageKey, type SearchUnit } from '../search/units.ts'
import { LOWER_SHIFT } from './doc-flags.ts'
import type { UnitTable, Units } from './unit-table.ts'
import { mayPassCap, type ScopeView } from './view.ts'

/**
 * Docs whose counts the lists cannot give for this query (resident/terms.ts): counted again from
 * their stored tokens when one of the query's terms is the whole of a camelCase piece there (the
 * piece's parts then count only where it does not match whole) or the scan may have stopped
 * recording (view.ts mayPassCap: the stored tokens give the scan's own counts, cap included, at
 * a fraction of a scan of the text: 200 texts of 256 KB were scanned whole by every search that
 * matched them, a second apiece), or the lowercase shifted with a CJK term (the scan places no
 * CJK match then); scanned when a head is odd. Held without positions counts as 0.5: covered, no BM25.
 */
export function scanWhereCountsFail(view: ScopeView, docs: readonly number[], counts: Float64Array, terms: readonly string[]): void {
  const width = terms.length
  if (width === 0) return
  const latin = new Set(terms.filter(term => !isCjkTerm(term)))
  const anyCjk = latin.size < terms.length
  const cjkTerms = terms.map(term => !latin.has(term))
  // per segment: the query terms that are some camelCase piece's whole there
  const wholes = view.segments.map(segment => (latin.size < 2 ? [] : terms.flatMap((term, index) => (latin.has(term) && segment.index.camelWhole(term) ? [index] : []))))
  // per segment: the docs (their positions in `docs`) counted again from their stored tokens
  const recounts: number[][] = view.segments.map(() => [])
  for (let position = 0; position < docs.length; position += 1) {
    const gid = docs[position]!
    const at = view.segments.indexOf(view.segmentOf(gid))
    const base = position * width
    const odd = view.oddKeys(gid)
    const irregular = odd !== undefined && odd.some(key => latin.has(key))
    if (irregular) {
      const scan = scanTerms(view.row(gid).text, terms)
      for (let index = 0; index < width; index += 1) counts[base + index] = 0
      for (const found of scan.positions) counts[base + found.term]! += 1
      scan.covered.forEach((covered, index) => {
        if (covered && counts[base + index] === 0) counts[base + index] = 0.5
      })
    } else if ((anyCjk && (view.flags[gid]! & LOWER_SHIFT) !== 0) || mayPassCap(counts, base, cjkTerms) || wholes[at]!.some(index => counts[base + index]! > 0)) recounts[at]!.push(position)
  }
  view.segments.forEach((segment, at) => {
    const mine = recounts[at]!
    if (mine.length > 0) segment.index.counts(terms, count => {
      for (const position of mine) count(docs[position]! - segment.offset, counts, position * width)
    })
  })
}

/**
 * The scans of these docs (scanTerms of their texts), by message key: from their stored tokens,
 * or, for a doc the tokens cannot speak for (an odd key among the terms), from their text. All
 * made before the search waits on anything: the key slots are the index's.
 */
export function docScans(view: ScopeView, gids: readonly number[], terms: readonly string[]): Map<string, { readonly text: string; readonly scan: TermScan }> {
  const out = new Map<string, { readonly text: string; readonly scan: TermScan }>()
  const latin = new Set(terms.filter(term => !isCjkTerm(term)))
  for (const segment of view.segments) {
    const mine = [...new Set(gids.filter(gid => gid >= segment.offset && gid < segment.offset + segment.below))]
    if (mine.length === 0) continue
    segment.index.scans(terms, stored => {
      for (const gid of mine) {
        const row = view.row(gid)
        const doc = gid - segment.offset
        const odd = segment.index.oddKeys(doc)
        const regular = !(odd !== undefined && odd.some(key => latin.has(key)))
        out.set(messageKey(row), { text: row.text, scan: regular ? stored(doc) : scanTerms(row.text, terms) })
      }
    })
  }
  return out
}

/** A ranked unit as the value history reads it: its scan and values, its parts' joined. */
export function rankedUnit(view: ScopeView, units: Units, table: UnitTable, unit: number, terms: readonly string[], scanned: ReadonlyMap<string, { readonly text: string; readonly scan: TermScan }>): RankedUnit {
  const message = view.row(units.rep[unit]!)
  const call = units.call[unit]!
  const question = units.question[unit]!
  const partnerGid = call >= 0 ? call : question
  const partner = partnerGid >= 0 ? view.row(partnerGid) : undefined
  const text = partner === undefined ? message.text : `${partner.text}\n${message.text}`
  const searchUnit: SearchUnit = {
    message,
    ...(call >= 0 ? { call: partner! } : {}),
    ...(question >= 0 ? { question: partner! } : {}),
    text,
    score: table.covered[unit]!,
  }
  const own = scanned.get(messageKey(message))!.scan
  const ownValues = view.valuesOf(units.rep[unit]!)
  if (partner === undefined) return { unit: searchUnit, covered: table.covered[unit]!, scan: own, ...(ownValues === undefined ? { values: [] } : { values: ownValues }) }
  // joined by a line break, which no token, CJK match or value crosses (but a number the partner
  // ends with may take a unit the message begins with: then the values are found again)
  const first = scanned.get(messageKey(partner))!.scan
  // past the scan's cut or its position cap the joined scan is not the parts' (scanTerms decides)
  if (text.length > RANK_TEXT_CHARS || first.positions.length + own.positions.length >= MAX_POSITIONS) return { unit: searchUnit, covered: table.covered[unit]!, scan: scanTerms(text, terms) }
  const shift = partner.text.length + 1
  const positions = [...first.positions, ...own.positions.map(position => ({ ...position, at: position.at + shift }))]
  const scan: TermScan = { covered: first.covered.map((covered, index) => covered || own.covered[index] === true), positions, scanned: text.length }
  const partnerValues = view.valuesOf(partnerGid)
  if (/[0-9]$/.test(partner.text)) return { unit: searchUnit, covered: table.covered[unit]!, scan }
  const values = [...partnerValues ?? [], ...(ownValues ?? []).map(value => ({ ...value, at: value.at + shift }))]
  return { unit: searchUnit, covered: table.covered[unit]!, scan, values }
}
