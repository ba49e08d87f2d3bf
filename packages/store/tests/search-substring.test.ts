/**
 * The newest-first substring list (`index: 'grams'`): the AND of a term's trigrams also matches
 * texts that hold the trigrams apart, so every candidate is checked against its text. The list is
 * the newest `limit` rows that hold the term (case-insensitively, or after NFKC), whatever number
 * of false candidates lies between them. SQLite checks each candidate in the statement (a short
 * ASCII text with instr(), any other with the same check in JavaScript), so none becomes a row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CANDIDATE_TEXT_CHARS, ShadowStore, type IndexQuery, type LineageSegment, type ShadowMessageInput } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

const TERM = 'payments/refund.ts'

/** Rows newest last: true holders of TERM in several spellings among false candidates of both kinds. */
function rows(sessionId: string): { input: ShadowMessageInput[]; holders: number[] } {
  const input: ShadowMessageInput[] = []
  const holders: number[] = []
  let seq = 1
  const add = (text: string, holds: boolean): void => {
    if (holds) holders.push(seq)
    input.push(message(sessionId, seq++, text))
  }
  for (let round = 0; round < 6; round += 1) {
    // false: every trigram of the term, never the term (ASCII: the SQL prefilter drops these)
    for (let index = 0; index < 25; index += 1) add(`moved src/payments/routes.ts and src/orders/refund.ts (${round}.${index})`, false)
    // false and non-ASCII: only the exact check in JavaScript drops these
    for (let index = 0; index < 7; index += 1) add(`src/payments/routes.ts → src/orders/refund.ts, 已修复 ${round}.${index}`, false)
    add(`the bug is in src/${TERM} line ${round}`, true)
    add(`SEE SRC/PAYMENTS/REFUND.TS → 退款 ${round}`, true)
  }
  // fullwidth: NFKC folds it to the term
  add('ｓｒｃ/ｐａｙｍｅｎｔｓ/ｒｅｆｕｎｄ.ｔｓ fails', true)
  // the term past a light read's cut: still a match, the whole text is checked
  add(`${'x'.repeat(CANDIDATE_TEXT_CHARS + 10)} src/${TERM}`, true)
  add('nothing here but payments, refunds and lib/ledger.ts', false)
  return { input, holders }
}

describe.each(TARGETS)('newest substring candidates on $name', target => {
  let store: ShadowStore
  let holders: number[]
  let segments: LineageSegment[]
  const list = (limit: number, terms: readonly string[] = [TERM]): IndexQuery => ({ segments, index: 'grams', terms, operator: 'or', limit, rankWindow: 1_000, order: 'newest', light: true })

  beforeAll(async () => {
    await target.setup()
    store = await ShadowStore.open(target.location())
    const made = rows('sub')
    holders = made.holders
    await store.append(made.input)
    segments = [{ sessionId: 'sub', tag: (await store.session('sub'))!.tag, belowSeq: Number.POSITIVE_INFINITY }]
  }, 60_000)
  afterAll(async () => {
    await store.close()
    await target.teardown()
  })

  it('lists the newest rows holding the term, in every spelling, past every false candidate', async () => {
    const newestFirst = holders.toReversed()
    for (const limit of [1, 2, 5, 9, newestFirst.length, 50]) {
      const result = await store.backend.searchIndex(list(limit))
      expect(result.hits.map(hit => hit.message.seq), `limit ${limit}`).toEqual(newestFirst.slice(0, limit))
    }
    // light rows: the long one comes back cut to its first CANDIDATE_TEXT_CHARS characters, the others whole
    const all = await store.backend.searchIndex(list(50))
    for (const hit of all.hits) {
      const stored = (await store.backend.getMessage('sub', hit.message.seq))!
      expect(hit.message.text).toBe(stored.text.slice(0, CANDIDATE_TEXT_CHARS))
    }
    expect(all.hits.find(hit => hit.message.seq === newestFirst[0])!.message.text.length).toBe(CANDIDATE_TEXT_CHARS)
  })

  it('cuts a light row at the same character on every backend, whatever its script', async () => {
    // 2- and 3-byte characters and astral ones (two code units): a cut in bytes alone would keep fewer characters
    const texts = [`${'é'.repeat(200_000)} ${TERM} ${'é'.repeat(100_000)}`, `${TERM} ${'连接池'.repeat(100_000)}`, `${TERM} ${'😀'.repeat(150_000)}`,
      // at the read's edge (backend.ts CANDIDATE_READ_BYTES): 3-byte characters only, and a pair whose first half is the last unit kept
      `${'连'.repeat(300_000)} ${TERM}`, `${'连'.repeat(CANDIDATE_TEXT_CHARS - 1)}😀${'连'.repeat(1_000)} ${TERM}`]
    const cut = await ShadowStore.open(target.location())
    try {
      await cut.append(texts.map((text, at) => message('cut', at + 1, text)))
      const scope = [{ sessionId: 'cut', tag: (await cut.session('cut'))!.tag, belowSeq: Number.POSITIVE_INFINITY }]
      const found = await cut.backend.searchIndex({ ...list(5), segments: scope })
      expect(found.hits.map(hit => hit.message.text)).toEqual(texts.toReversed().map(text => text.slice(0, CANDIDATE_TEXT_CHARS)))
    } finally {
      await cut.close()
    }
  })

  it('takes any of several terms, and none when no row holds one', async () => {
    const either = await store.backend.searchIndex(list(50, [TERM, 'lib/ledger.ts']))
    expect(either.hits.map(hit => hit.message.seq)).toEqual([...holders, holders.at(-1)! + 1].toReversed())
    expect((await store.backend.searchIndex(list(10, ['payments/refund.js']))).hits).toEqual([])
  })

  it('checks every candidate in the query: past any number of false ones, long, non-ASCII or holding a NUL', async () => {
    // 200 false candidates of both kinds newer than the only holder: each is dropped where it is read
    const crowd = await ShadowStore.open(target.location())
    try {
      const input = [message('crowd', 1, `the bug is in src/${TERM}`)]
      for (let seq = 2; seq <= 201; seq += 1) input.push(message('crowd', seq, seq % 2 === 0 ? `src/payments/routes.ts → src/orders/refund.ts ${seq}` : `src/payments/routes.ts and src/orders/refund.ts ${seq}`))
      // holders a short ASCII check does not read: long, with a NUL byte, NFKC-folded, long and NFKC-folded
      input.push(message('crowd', 202, `${'lorem ipsum '.repeat(1_000)} src/PAYMENTS/refund.ts`))
      input.push(message('crowd', 203, `nul\u0000 then src/${TERM}`))
      input.push(message('crowd', 204, `${'lorem ipsum '.repeat(1_000)} ｓｒｃ/ｐａｙｍｅｎｔｓ/ｒｅｆｕｎｄ.ｔｓ`))
      input.push(message('crowd', 205, `${'lorem ipsum '.repeat(1_000)} src/payments/routes.ts and src/orders/refund.ts`))
      await crowd.append(input)
      const scope = [{ sessionId: 'crowd', tag: (await crowd.session('crowd'))!.tag, belowSeq: Number.POSITIVE_INFINITY }]
      expect((await crowd.backend.searchIndex({ ...list(10), segments: scope })).hits.map(hit => hit.message.seq)).toEqual([204, 203, 202, 1])
      // an OR of nested terms: the shortest decides (and the longer terms cost nothing more)
      const nested = [TERM, `src/${TERM}`, `xsrc/${TERM}`]
      expect((await crowd.backend.searchIndex({ ...list(10, nested), segments: scope })).hits.map(hit => hit.message.seq)).toEqual([204, 203, 202, 1])
      expect((await crowd.backend.searchIndex({ ...list(10, nested), operator: 'and', segments: scope })).hits).toEqual([])
      expect((await crowd.backend.searchIndex({ ...list(10, nested.slice(0, 2)), operator: 'and', segments: scope })).hits.map(hit => hit.message.seq)).toEqual([204, 203, 202, 1])
      const counted = await crowd.backend.documentFrequencies({ segments: scope, index: 'grams', terms: [TERM], cap: 1_000 })
      expect(counted).toEqual([4])
    } finally {
      await crowd.close()
    }
  })

  it('matches a long term\'s punctuation literally, as every backend\'s check reads it', async () => {
    // past 32 characters PostgreSQL matches with a regular expression: '.', '$', '\\', '-' and ':' must be themselves
    const long = 'packages/store/src/a.b$c\\d-e:f_g/h1.ts'
    const near = ['packages/store/src/aXb$c\\d-e:f_g/h1.ts', 'packages/store/src/a.b$c/d-e:f_g/h1.ts', 'packages/store/src/a.bc\\d-e:f_g/h1.ts', 'packages/store/src/a.b$c\\d-e:fXg/h1.ts']
    const literal = await ShadowStore.open(target.location())
    try {
      await literal.append([message('lit', 1, `see ${long} now`), ...near.map((text, at) => message('lit', at + 2, `see ${text} now`)), message('lit', 6, `SEE ${long.toUpperCase()}`)])
      const scope = [{ sessionId: 'lit', tag: (await literal.session('lit'))!.tag, belowSeq: Number.POSITIVE_INFINITY }]
      for (const terms of [[long], [long, 'zzz-not-held-anywhere-at-all']]) {
        const found = await literal.backend.searchIndex({ ...list(10, terms), segments: scope })
        expect(found.hits.map(hit => hit.message.seq), terms.join(' ')).toEqual([6, 1])
        expect(await literal.backend.documentFrequencies({ segments: scope, index: 'grams', terms, cap: 100 }), terms.join(' ')).toEqual(terms.map(term => (term.startsWith('zzz') ? 0 : 2)))
        const wide = await literal.backend.documentFrequencies({ segments: scope, index: 'grams', terms, cap: 100, global: true })
        expect(wide).toEqual(terms.map(term => (term.startsWith('zzz') ? 0 : 2)))
      }
      expect((await literal.backend.searchIndex({ ...list(10, [long, 'packages/store/src']), operator: 'and', segments: scope })).hits.map(hit => hit.message.seq)).toEqual([6, 1])
      // short terms (a LIKE on PostgreSQL): the same literal reading
      expect((await literal.backend.searchIndex({ ...list(10, ['b$c\\d-e', 'a.b$c']), operator: 'and', segments: scope })).hits.map(hit => hit.message.seq)).toEqual([6, 5, 1])
      expect((await literal.backend.searchIndex({ ...list(10, ['b$c\\d-e', 'a.b$c']), segments: scope })).hits.map(hit => hit.message.seq)).toEqual([6, 5, 3, 2, 1])
    } finally {
      await literal.close()
    }
  })
})
