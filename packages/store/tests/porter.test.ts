import { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import { porterStem } from '../src/porter.ts'

/** What FTS5's own `porter` tokenizer makes of each word (its vocabulary table). */
function sqliteStems(words: readonly string[]): Map<string, string> {
  const db = new DatabaseSync(':memory:')
  db.exec(`CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61 remove_diacritics 2'); CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance');`)
  const insert = db.prepare('INSERT INTO t(rowid, body) VALUES (?, ?)')
  words.forEach((word, index) => insert.run(index + 1, word))
  const out = new Map<string, string>()
  for (const row of db.prepare('SELECT doc, term FROM v').all() as Array<{ doc: number; term: string }>) out.set(words[row.doc - 1]!, row.term)
  db.close()
  return out
}

// General English and software vocabulary (no test-set words), plus every suffix the algorithm names.
const WORDS = `games game donated donate hiking hike databases database decided decide timeouts timeout connections connection
running runs ran caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized hopping
tanned falling hissing fizzed failing filing happy sky relational conditional rational valenci hesitanci digitizer conformabli
radicalli differentli vileli analogousli vietnamization predication operator feudalism decisiveness hopefulness callousness
formaliti sensitiviti sensibiliti triplicate formative formalize electriciti electrical hopeful goodness revival allowance
inference airliner gyroscopic adjustable defensible irritant replacement adjustment dependent adoption homologou communism
activate angulariti homologous effective bowdlerize probate rate cease controll roll generalization generalizations
configured configuration configurable deployment deployments deploying retries retried retrying caching cached cache
compaction compacted indexing indexed queries queried query migrations migrated migrating logging logger logs
authentication authenticated authorize authorization serialization serializer serialized dependencies dependency
yesterday morning evening reply replies replied value values changed changing change pool pooling sizes
optimization optimizer optimizing utilities utility availability responsibilities abilities ability
agreement agreements measurement measurements happiness business businesses process processes processing
electricity generously gently seriously anxiously really finally totally apply applies applied appliance
analogy analogies biology technological technology rollback rollbacks flaky flakiness tokenizer tokenizers
sss ies yyy ayy eye eyes dying lying tying seeing fleeing agreeing`.split(/\s+/).filter(Boolean)

describe('porterStem', () => {
  it('stems every word exactly as FTS5 porter does', () => {
    const expected = sqliteStems(WORDS)
    const wrong = WORDS.filter(word => porterStem(word) !== expected.get(word)).map(word => `${word}: ours ${porterStem(word)}, sqlite ${expected.get(word)}`)
    expect(wrong).toEqual([])
  })

  it('agrees with FTS5 porter on random suffix-heavy words', () => {
    let seed = 7
    const next = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648
    const parts = ['a', 'e', 'i', 'o', 'u', 'y', 'b', 'c', 'l', 's', 't', 'r', 'n', 'z', 'at', 'bl', 'iz', 'ss', 'ing', 'ed', 'ies', 'tion', 'ate', 'ful', 'ness', 'ent', 'ous', 'ive', 'al', 'ic', 'er', 'li', 'iti', 'ism', 'ance', 'ence', 'able', 'eed', 'll', 'e']
    const words = Array.from({ length: 20_000 }, () => Array.from({ length: 1 + Math.floor(next() * 5) }, () => parts[Math.floor(next() * parts.length)]).join(''))
    const expected = sqliteStems(words)
    const wrong = [...new Set(words)].filter(word => expected.has(word) && porterStem(word) !== expected.get(word)).map(word => `${word}: ours ${porterStem(word)}, sqlite ${expected.get(word)}`)
    expect(wrong).toEqual([])
    // ranking skips stemming a token whose first two characters begin no term: sound only if stems keep them
    expect([...new Set(words)].filter(word => !word.startsWith(porterStem(word).slice(0, 2)))).toEqual([])
  })

  it('leaves short, long and non-ASCII tokens alone', () => {
    expect(porterStem('is')).toBe('is')
    expect(porterStem('x'.repeat(70))).toBe('x'.repeat(70))
    expect(porterStem('数据库')).toBe('数据库')
  })
})
