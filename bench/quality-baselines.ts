/**
 * BM25 baselines for bench:quality, each an FTS5 table in its own in-memory database:
 * - plain: the default `unicode61` tokenizer over the raw text, the query's unicode61 tokens OR-ed;
 * - ours: the store's own analyzer (`porter unicode61 remove_diacritics 2` over `indexViews().words`,
 *   query terms from `analyzeQuery().words`), so it differs from ours only in ranking.
 */
import { DatabaseSync, type StatementSync } from 'node:sqlite'
import { analyzeQuery, coverageTerms, ftsString, indexViews } from '@dsh-shadow/store'

export interface Window {
  readonly from: number
  readonly to: number
}

export class Bm25Baseline {
  private readonly db = new DatabaseSync(':memory:')
  private readonly insert: StatementSync
  private readonly query: StatementSync
  private readonly count: StatementSync
  readonly analyzed: boolean

  constructor(analyzed: boolean) {
    this.analyzed = analyzed
    const tokenizer = analyzed ? `, tokenize='porter unicode61 remove_diacritics 2'` : ''
    this.db.exec(`CREATE VIRTUAL TABLE docs USING fts5(body, session UNINDEXED, seq UNINDEXED, time UNINDEXED${tokenizer})`)
    this.insert = this.db.prepare('INSERT INTO docs(body, session, seq, time) VALUES (?, ?, ?, ?)')
    this.query = this.db.prepare('SELECT seq FROM docs WHERE docs MATCH ? AND session = ? AND time >= ? AND time <= ? ORDER BY bm25(docs) LIMIT ?')
    this.count = this.db.prepare('SELECT count(*) AS n FROM docs WHERE docs MATCH ? AND session = ?')
  }

  /**
   * How many messages of the session hold any of the query's topic words (stopwords left out, as
   * the search's own lists do), and how many hold its rarest one that some message holds (0: none
   * does). Our analyzer only.
   */
  matches(text: string, sessionId: string): { any: number; rarest: number } {
    const words = analyzeQuery(text).words.filter(word => coverageTerms([word]).length > 0)
    const count = (match: string): number => Number((this.count.get(match, sessionId) as { n: number }).n)
    if (!this.analyzed || words.length === 0) return { any: 0, rarest: 0 }
    const each = words.map(word => count(ftsString(word))).filter(n => n > 0)
    return { any: count(words.map(ftsString).join(' OR ')), rarest: each.length === 0 ? 0 : Math.min(...each) }
  }

  add(messages: ReadonlyArray<{ sessionId: string; seq: number; time: number; text: string }>): void {
    this.db.exec('BEGIN')
    for (const message of messages) this.insert.run(this.analyzed ? indexViews(message.text).words : message.text, message.sessionId, message.seq, message.time)
    this.db.exec('COMMIT')
  }

  rank(text: string, sessionId: string, k: number, window?: Window): number[] {
    const terms = this.analyzed
      ? [...analyzeQuery(text).words]
      : [...new Set([...text.matchAll(/[\p{L}\p{N}\p{M}]+/gu)].map(match => match[0].toLowerCase()))]
    if (terms.length === 0) return []
    const match = terms.map(ftsString).join(' OR ')
    try {
      return (this.query.all(match, sessionId, window?.from ?? 0, window?.to ?? Number.MAX_SAFE_INTEGER, k) as Array<{ seq: number }>).map(row => Number(row.seq))
    } catch {
      return []
    }
  }
}
