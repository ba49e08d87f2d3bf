/**
 * Scripts written without spaces between words (scripts.ts): Thai, Lao, Khmer and Myanmar runs
 * are analysed as Chinese runs are (dictionary words, character bigrams, whole runs as substring
 * anchors), and their vowel and tone marks are spelled so no index cuts a word at them. Before, a
 * word inside a sentence was found in no scope: unicode61 made the sentence one token, cut again
 * at every mark. Also: a CJK term keeps its marks when ranked (the kana デ was folded to テ, and
 * matched no text). Both backends; the session (resident) and store-wide (index lists) searches.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { analyzeQuery, indexViews } from '../src/analyzer.ts'
import { ShadowStore, type SearchOptions, type SearchResult } from '../src/index.ts'
import { messageViews } from '../src/messages.ts'
import { lexemes } from '../src/postgres/tokens.ts'
import { spelledMarks } from '../src/scripts.ts'
import { search } from '../src/search/search.ts'
import { coverageTerms } from '../src/search/ranking.ts'
import { wordsMatch } from '../src/sqlite/terms.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

/** A sentence per script with a word inside it (no space on either side), and the word. */
const SENTENCES = [
  { script: 'Thai', text: 'ฐานข้อมูลล่มเพราะการเชื่อมต่อหมด', word: 'ข้อมูล' },
  { script: 'Thai', text: 'ระบบทำงานปกติหลังจากรีสตาร์ทเซิร์ฟเวอร์', word: 'เซิร์ฟเวอร์' },
  { script: 'Lao', text: 'ຖານຂໍ້ມູນລົ້ມໃນຕອນເຊົ້າ', word: 'ຂໍ້ມູນ' },
  { script: 'Khmer', text: 'មូលដ្ឋានទិន្នន័យបានគាំងម្តងទៀត', word: 'ទិន្នន័យ' },
  { script: 'Myanmar', text: 'ဒေတာဘေ့စ်ပျက်သွားတယ်', word: 'ဘေ့စ်' },
] as const
const NOISE = ['the deploy finished', 'ระบบสำรองข้อความ', 'ການປະຊຸມ', 'ការប្រជុំ', 'အစည်းအဝေး', 'データベースが落ちた', '数据库迁移完成']

describe('unspaced scripts in the analyzer', () => {
  it('indexes a run as dictionary words and bigrams, each one token, and keeps the run whole as an anchor', () => {
    const views = indexViews('ฐานข้อมูลล่มเพราะการเชื่อมต่อหมด')
    // the whole sentence is no word of the view; its words and bigrams are, spelled
    const tokens = new Set(views.words.split(/\s+/))
    expect(tokens.has('ฐานข้อมูลล่มเพราะการเชื่อมต่อหมด')).toBe(false)
    for (const word of ['ฐาน', 'ข้อมูล', 'ล่ม', 'การ', 'เชื่อม', 'ต่อ', 'ข้', 'มู']) expect(tokens.has(spelledMarks(word)), word).toBe(true)
    // no mark is left to cut a token: what SQLite's unicode61 and the PostgreSQL lexemes make of the view is its words
    expect(/\p{M}/u.test(views.words)).toBe(false)
    expect(lexemes(views.words)).toContain(spelledMarks('ข้อมูล'))
    expect(views.grams).toBe('ฐานข้อมูลล่มเพราะการเชื่อมต่อหมด')
  })

  it('makes one index token of a marked query word on both backends, the view\'s own', () => {
    const spelled = spelledMarks('ข้อมูล')
    expect(wordsMatch(['ข้อมูล'], 'and')).toBe(`"${spelled}"`)
    expect(lexemes('ข้อมูล')).toEqual([spelled])
    // spelled twice is spelled once (the PostgreSQL lexemes spell a view the analyzer spelled)
    expect(spelledMarks(spelled)).toBe(spelled)
    // nothing else is touched: Hindi's marks are no word breaks of Thai, and Latin folds as before
    expect(spelledMarks('डेटाबेस café')).toBe('डेटाबेस café')
  })

  it('ends a run at the scripts\' punctuation (inside one, a bigram across ។ was a single letter in the index)', () => {
    for (const text of ['ទៀត។បាន', 'သွားတယ်။ပြီး', 'ระบบ๚ปกติ']) {
      const tokens = indexViews(text).words.match(/[\p{L}\p{N}\p{Co}]+/gu) ?? []
      expect(tokens.filter(token => [...token].length === 1), text).toEqual([])
    }
  })

  it('keeps those runs as written when folding (NFKC split ำ into ํ and า, ໜ into ຫ and ນ), and drops private-use characters', () => {
    for (const word of ['ทำ', 'น้ำ', 'ຳ', 'ໜ້າ', 'ໝົດ']) {
      expect(indexViews(`x ${word} y`).words.includes(spelledMarks(word)), word).toBe(true)
      expect(analyzeQuery(word).literals, word).toEqual([word])
    }
    // NFKC still folds the rest, next to such a run too: fullwidth letters, ligatures
    expect(indexViews('ｐｏｏｌทำﬁle').words).toContain('pool')
    expect(indexViews('ｐｏｏｌทำﬁle').words).toContain('file')
    // an icon glued to a word is no part of it (PostgreSQL's lexemes keep private-use characters, for the spelled marks)
    expect(lexemes(indexViews('\uE0A0main \u{F0E49}\u{F0E49} branch').words)).toEqual(['main', 'branch'])
    expect(analyzeQuery('\uE0A0main').words).toEqual(['main'])
  })

  it('analyses a query in those scripts into words and a substring, and ranks its terms with their marks', () => {
    const analyzed = analyzeQuery('ข้อมูล')
    expect(analyzed.words).toContain('ข้อมูล')
    expect(analyzed.grams).toEqual(['ข้อมูล'])
    expect(analyzed.topics).toEqual(['ข้อมูล'])
    // ranked as written: folded, ข้อมูล was ขอมล and デ was テ, which no text holds
    expect(coverageTerms(analyzed.words)).toContain('ข้อมูล')
    expect(coverageTerms(analyzeQuery('データベース').words)).toContain('データベース')
    expect(coverageTerms(['café'])).toEqual(['cafe'])
  })
})

/** A session searched the three ways: its resident index, its index lists, store-wide. */
function threeWays(store: ShadowStore, sessionId: string): Array<[string, (query: string) => Promise<SearchResult>]> {
  return [
    ['session', query => store.search(query, { sessionId })],
    ['session lists', query => search(store.backend, query, { sessionId })],
    ['store-wide', query => store.search(query, { sessionId, allSessions: true })],
  ]
}

describe.each(TARGETS)('unspaced scripts searched on $name', target => {
  beforeAll(async () => {
    await target.setup()
  })
  afterAll(async () => {
    await target.teardown()
  })

  const rows = (sessionId: string) => [
    ...NOISE.map((text, index) => message(sessionId, index + 1, text)),
    ...SENTENCES.map((sentence, index) => message(sessionId, NOISE.length + index + 1, sentence.text)),
  ]

  it('finds a word inside a sentence, in the session and store-wide, and counts it', async () => {
    const store = await ShadowStore.open(target.location())
    try {
      await store.append(rows('th'))
      await store.append([message('other', 1, 'nothing to see')])
      const scopes: SearchOptions[] = [{ sessionId: 'th' }, { sessionId: 'other', allSessions: true }]
      for (const [at, sentence] of SENTENCES.entries()) {
        const seq = NOISE.length + at + 1
        for (const options of scopes) {
          const result = await store.search(sentence.word, options)
          const label = `${sentence.script} ${sentence.word} ${JSON.stringify(options)}`
          expect(result.hits[0]?.message.seq, label).toBe(seq)
          expect(result.hits[0]!.snippet, label).toContain(`**${sentence.word}**`)
          // reported as held once in scope, and in the hit (Myanmar's dictionary cuts syllables: each one is)
          const reported = result.terms.map(term => [term.term, term.inScope, term.inHits])
          if (sentence.script === 'Myanmar') expect(reported, label).toEqual([['ဘေ့', 1, 1], ['စ်', 1, 1]])
          else expect(reported, label).toEqual([[sentence.word, 1, 1]])
        }
        // the session's scope read through the index lists (not its resident index) ranks it first too
        expect((await search(store.backend, sentence.word, { sessionId: 'th' })).hits[0]?.message.seq, sentence.word).toBe(seq)
      }
      // the kana with a voiced mark: the hit holds the query word itself
      const kana = await store.search('データベース', { sessionId: 'th' })
      expect(kana.hits[0]?.message.text).toBe('データベースが落ちた')
      expect(kana.terms.find(term => term.term === 'データベース')).toMatchObject({ inScope: 1, inHits: 1 })
    } finally {
      await store.close()
    }
  })

  it('ranks by the word as written, on every backend: ำ is not ํา, marks out of order are not in order, an icon is no mark', async () => {
    // two stores: a store-wide search of one sees only its own session
    const stores = [await ShadowStore.open(target.location()), await ShadowStore.open(target.location())]
    try {
      const written = [
        message('am', 1, 'ผมทำเสร็จแล้วนะครับ ขอบคุณที่ช่วยตรวจสอบให้'),
        message('am', 2, 'จำได้ น้ำเย็น สำคัญ จำนวน'),
        message('am', 3, 'ເງິນໝົດແລ້ວ'),
        message('am', 4, 'ဥး'),
        message('am', 5, 'ဦးသန့်'),
        message('am', 6, '\uE0A0main branch'),
        message('am', 7, '\u{F0E49}\u{F0E49} icon'),
        message('typed', 1, 'ทำ'),
        message('typed', 2, 'ท\u0E4D\u0E32'),
        message('typed', 3, 'ทำ ok'),
        // ู before ้ is NFKD's order; ้ before ู as typed here
        message('typed', 4, 'ผ\u0E49\u0E39ใช้งาน'),
        message('typed', 5, 'ผ\u0E39\u0E49ดูแล'),
        message('typed', 6, 'ข้อมูล\u0301 พัง'),
        message('typed', 7, 'ข้อมูล'),
      ]
      for (const [at, store] of stores.entries()) await store.append(written.filter(row => row.sessionId === ['am', 'typed'][at]))
      // [session, query, the seqs found (the first one ranked first), the terms reported: [term, inScope, inHits]]
      const cases: Array<[string, string, number[], Array<[string, number, number]>?]> = [
        // NFKC split ำ: the message without ทำ ranked first
        ['am', 'ทำ', [1], [['ทำ', 1, 1]]],
        ['am', 'ໝົດ', [3]],
        // ဦ is ဥ with a vowel sign: another word, on PostgreSQL too
        ['am', 'ဦး', [5]],
        ['am', 'main', [6]],
        // an icon of the private-use area is no spelled mark
        ['am', '\u0E49\u0E49', []],
        ['typed', 'ทำ', [1, 3], [['ทำ', 2, 2]]],
        ['typed', 'ผ\u0E49\u0E39', [4]],
        // a mark of another script after the run is no term of its own
        ['typed', 'ข้อมูล\u0301', [6, 7], [['ข้อมูล', 2, 2]]],
      ]
      for (const [sessionId, query, seqs, terms] of cases) {
        for (const [name, run] of threeWays(stores[sessionId === 'am' ? 0 : 1]!, sessionId)) {
          const result = await run(query)
          const label = `${query} ${name}`
          const found = result.hits.map(hit => hit.message.seq)
          expect(found.toSorted((a, b) => a - b), label).toEqual(seqs)
          if (seqs.length === 1) expect(found[0], label).toBe(seqs[0])
          if (terms !== undefined) expect(result.terms.map(term => [term.term, term.inScope, term.inHits]), label).toEqual(terms)
        }
      }
    } finally {
      for (const store of stores) await store.close()
    }
  })

  it('rebuilds a store indexed by the previous analyzer when it is opened, and finds the words then', async () => {
    const location = target.location()
    const store = await ShadowStore.open(location)
    await store.append(rows('old'))
    // indexed by an older analyzer (version 2), here one that indexed nothing of these rows
    await store.backend.reindex((text, time) => ({ ...messageViews(text, time), words: 'stale', grams: '' }), 2)
    const stale = await search(store.backend, 'ข้อมูล', { sessionId: 'old' })
    expect(stale.hits.map(hit => hit.message.text)).not.toContain(SENTENCES[0].text)
    await store.close()
    const reopened = await ShadowStore.open(location)
    try {
      for (const options of [{ sessionId: 'old' }, { sessionId: 'old', allSessions: true }]) {
        expect((await search(reopened.backend, 'ข้อมูล', options)).hits[0]?.message.text, JSON.stringify(options)).toBe(SENTENCES[0].text)
      }
    } finally {
      await reopened.close()
    }
  })
})
