import { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import { foldTables, termSources } from '../src/fold-sources.ts'
import { fold } from '../src/scripts.ts'
import { holdsInBytes, holdsTerms, registerTermsFunction, sourceBytes, usableTerms } from '../src/sqlite/terms.ts'

/**
 * Characters chosen for what fold and lowercasing do to them: ideographs and their compatibility
 * forms (㊥ 🈭 ⽂ U+F900), Hangul syllables and the jamo (conjoining and compatibility) they
 * compose from, kana and the voiced marks (combining, spacing, halfwidth), Thai kept as written
 * (ำ vs ํา, a tone mark), cased and caseless Latin and Greek (Σ σ ς İ), fullwidth letters, digits
 * and their circled and superscript forms, a private-use icon, spaces, U+FFFD, combining marks.
 */
const ALPHABET = [
  '中', '文', '字', '数', '据', '库', '㊥', '\u{1F22D}', '\u2F42', '\uF900', '\u8C48', '\u2F00', '一',
  '가', '각', '\u1100', '\u1161', '\u11A8', '\u3131', '\u314F', '한',
  'か', 'が', 'カ', 'ガ', '\u3099', '\u309B', 'ｶ', 'ﾞ', 'デ', 'ー',
  'ก', 'ข', 'ค', 'ำ', 'ํ', 'า', '่', 'ท',
  'a', 'A', 'b', 'Σ', 'σ', 'ς', 'İ', 'i', 'Ａ', 'é', 'e', '\u0301', '\u0340',
  '1', '①', '¹', '２',
  '\uE000', ' ', '\u00A0', '\uFFFD', '-', '/',
]

function random(seed: number): (n: number) => number {
  let state = seed
  return n => (state = (state * 1103515245 + 12345) % 2_147_483_648) % n
}

describe('fold sources: what a check of stored bytes must rule out', () => {
  it('builds its tables block by block to the same answer as every code point alone', () => {
    const { preimages, lowered } = foldTables()
    const expectedPre = new Map<string, Set<string>>()
    const expectedLowered = new Set<string>()
    for (let code = 0; code < 0x110000; code += 1) {
      if (code >= 0xd800 && code < 0xe000) continue
      const char = String.fromCodePoint(code)
      const normal = char.normalize('NFKC')
      if (normal !== char) for (const made of normal) if (made !== char) expectedPre.set(made, (expectedPre.get(made) ?? new Set()).add(char))
      const lower = char.toLowerCase()
      if (lower !== char) for (const made of lower) expectedLowered.add(made)
    }
    expect(new Map([...preimages].map(([char, list]) => [char, new Set(list)]))).toEqual(expectedPre)
    expect(lowered).toEqual(expectedLowered)
    expect(preimages.get('中')).toEqual(expect.arrayContaining(['㊥', '\u{1F22D}']))
  })

  it('decides only terms no case or other form can make, and names their sources', () => {
    expect(termSources('中文字中')).toEqual(expect.arrayContaining(['㊥', '\u{1F22D}', '\u2F42']))
    // a syllable composes from jamo, a voiced kana from its mark: the trailing parts are sources
    expect(termSources('한국어')).toEqual(expect.arrayContaining(['\u1161', '\u11AB', '\u314F']))
    expect(termSources('がっこう')).toEqual(expect.arrayContaining(['\u3099', 'ﾞ']))
    // kept as written: ำ itself, a tone mark
    expect(termSources('ทำงาน')).toBeDefined()
    expect(termSources('ข้อมูล')).toBeDefined()
    // ς is no character's lowercase alone, but Σ's after a letter (ΛΟΓΟΣ__init holds ς__ lowercased)
    expect(termSources('ς__')).toBeUndefined()
    for (const term of ['pool', 'db/pool', 'σχήμα', 'a中文', '中 文', '中\uFFFD文', '12345', 'é中文', '\uE000中文']) expect(termSources(term), term).toBeUndefined()
  })

  it('agrees with the decoded check wherever it decides', () => {
    const next = random(11)
    let decided = 0
    let held = 0
    let rounds = 0
    for (let round = 0; round < 6000; round += 1) {
      const text = Array.from({ length: 1 + next(24) }, () => ALPHABET[next(ALPHABET.length)]!).join('')
      // terms as a query makes them (folded, lowercased), from pieces of this text and of others
      const piece = (): string => {
        const source = next(3) === 0 ? Array.from({ length: 8 }, () => ALPHABET[next(ALPHABET.length)]!).join('') : text
        const chars = [...source]
        const from = next(chars.length)
        const cut = (value: string): string => { const all = [...value]; const at = next(all.length); return all.slice(at, at + 3 + next(4)).join('') }
        // lowercased in place (Σ after a letter is ς there) or piece by piece
        return next(2) === 0 ? cut(fold(source).toLowerCase()) : fold(chars.slice(from, from + 3 + next(4)).join('')).toLowerCase()
      }
      const terms = Array.from({ length: 1 + next(3) }, piece)
      for (const operator of ['or', 'and'] as const) {
        const usable = usableTerms(terms, operator)
        const quick = holdsInBytes(Buffer.from(text, 'utf8'), usable, sourceBytes(usable), operator)
        rounds += 1
        if (quick === undefined) continue
        decided += 1
        if (quick) held += 1
        expect(quick, `${operator} ${JSON.stringify(terms)} in ${JSON.stringify(text)}`).toBe(holdsTerms(text, terms, operator))
      }
    }
    // the check is not vacuous: it decides many, both ways
    expect(decided).toBeGreaterThan(rounds / 10)
    expect(held).toBeGreaterThan(decided / 20)
    expect(decided - held).toBeGreaterThan(decided / 20)
  })

  it('finds a term written only in another form in a long stored text, and skips one whose trigrams only co-occur', () => {
    const db = new DatabaseSync(':memory:')
    registerTermsFunction(db)
    const holds = (text: string, terms: string[], operator: 'or' | 'and' = 'or'): number =>
      (db.prepare('SELECT shadow_holds(?, ?, ?) AS n').get(Buffer.from(text, 'utf8'), operator, JSON.stringify(terms)) as { n: number }).n
    // past the byte check's threshold (64 KB)
    const filler = '中文字 文字中 '.repeat(10_000)
    expect(holds(filler, ['中文字中'])).toBe(0)
    expect(holds(`${filler}中文字中`, ['中文字中'])).toBe(1)
    // the same ideographs through a compatibility form, a Kangxi radical, jamo, a voiced mark, a fullwidth letter
    expect(holds(`${filler}㊥文字中`, ['中文字中'])).toBe(1)
    expect(holds(`${filler}中\u2F42字中`, ['中文字中'])).toBe(1)
    expect(holds(`${filler}\u1112\u1161\u11AB국어`, ['한국어'])).toBe(1)
    expect(holds(`${filler}か\u3099っこう`, ['がっこう'])).toBe(1)
    expect(holds(`${filler}ｶﾞｯｺｳ`, ['がっこう'])).toBe(0)
    expect(holds(`${filler}ｶﾞｯｺｳ`, ['ガッコウ'.normalize('NFKC')])).toBe(1)
    expect(holds(`${filler}DB/POOL`, ['db/pool'])).toBe(1)
    expect(holds(`${filler}ΛΟΓΟΣ__init`, ['ς__'])).toBe(1)
    expect(holds(`${filler}ΑΣ中文字`, ['ς中文字'])).toBe(1)
    expect(holds(`${filler}中文字中`, ['中文字中', '数据库'], 'and')).toBe(0)
    expect(holds(`${filler}中文字中 数据库`, ['中文字中', '数据库'], 'and')).toBe(1)
    db.close()
  })
})
