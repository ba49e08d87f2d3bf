/**
 * A search racing writers of another handle (another process, on the real store): between a
 * search's id lists (listIds) and its read of the chosen rows (candidateRows) a session is
 * forgotten and new rows are written. No result may hold a row the lists did not name — above
 * all none of another session — on either backend.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS, type StoreTarget } from './targets.ts'

/**
 * Two handles on one new store (two processes, as far as the store can tell), closed after `run`.
 * The searcher reads the index lists (the races below are theirs); `resident` searches a lineage
 * scope in a resident index instead (its race: a write between its sync and its end).
 */
async function twoHandles(target: StoreTarget, run: (searcher: ShadowStore, writer: ShadowStore, location: string) => Promise<void>, resident = false): Promise<void> {
  const location = target.location()
  const searcher = await ShadowStore.open(location, resident ? {} : { resident: false })
  const writer = await ShadowStore.open(location)
  try {
    await run(searcher, writer, location)
  } finally {
    await searcher.close()
    await writer.close()
  }
}

/** Sessions of one workspace, each with four rows saying 'needle'. */
async function seed(store: ShadowStore, sessionIds: readonly string[], workspace = 'w'): Promise<void> {
  for (const sessionId of sessionIds) await store.registerSession({ sessionId, workspace })
  for (const sessionId of sessionIds) await store.append(Array.from({ length: 4 }, (_, index) => message(sessionId, index + 1, `needle ${index} in ${sessionId}`)))
}

/** The first call of any of these backend methods waits for `race` (run once) before it runs; the answer says whether it ran. */
function beforeFirst(store: ShadowStore, names: readonly string[], race: () => Promise<unknown>): () => boolean {
  const backend = store.backend as unknown as Record<string, (...args: never[]) => unknown>
  let running: Promise<unknown> | undefined
  for (const name of names) {
    // (a read a backend does not have is not raced: PostgreSQL has no getMessages)
    if (backend[name] === undefined) continue
    const real = backend[name]!.bind(store.backend)
    backend[name] = async (...args: never[]) => {
      await (running ??= race())
      return real(...args)
    }
  }
  return () => running !== undefined
}

describe.each(TARGETS)('a search racing forget and appends on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it.each([
    ['forgets the searched session', (writer: ShadowStore) => writer.forget('rb')],
    ['removes its rows', (writer: ShadowStore) => writer.remove('rb', [1, 2, 3, 4, 5])],
    ['forgets every session', async (writer: ShadowStore) => {
      await writer.forget('rb')
      await writer.forget('ra')
    }],
  ])('never returns a row of another session written under a deleted row\'s id (a writer %s)', async (_writer, remove) => {
    await twoHandles(target, async (searcher, writer) => {
      await searcher.append(Array.from({ length: 5 }, (_, index) => message('ra', index + 1, `plain row ${index} of the other session`)))
      // the newest rows of the store: their ids are the highest
      await searcher.append(Array.from({ length: 5 }, (_, index) => message('rb', index + 1, `needle row ${index} of the searched session`)))
      const backend = searcher.backend as { candidateRows?: (ids: readonly number[]) => unknown }
      const real = backend.candidateRows!.bind(searcher.backend)
      let raced = 0
      backend.candidateRows = async (ids: readonly number[]) => {
        if (raced++ === 0) {
          await remove(writer)
          await writer.append(Array.from({ length: 10 }, (_, index) => message('ra', index + 6, `private text ${index} written after the forget`)))
        }
        return real(ids)
      }
      const result = await searcher.search('needle', { sessionId: 'rb' })
      expect(raced).toBe(1)
      expect(result.hits.map(hit => hit.message.sessionId)).not.toContain('ra')
      expect(result.hits.map(hit => hit.message.text).join('\n')).not.toContain('private')
    })
  })
})

describe.each(TARGETS)('a search whose scope loses a session mid-search on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it.each([
    ['a session', { sessionId: 'wa' }, ['wa']],
    ['a workspace', { sessionId: 'wa', workspace: 'w' }, ['wa', 'wb']],
  ] as const)('never searches the whole store when the scope of %s shrank to its size', async (_scope, scope, own) => {
    await twoHandles(target, async (searcher, writer) => {
      await seed(searcher, ['wa', 'wb'])
      await seed(searcher, ['wx'], 'x')
      // the scope is resolved; before any list is read (or the scope's size asked), the searched
      // session is forgotten: the store then holds as many sessions as the scope names, one of
      // them outside it
      const raced = beforeFirst(searcher, ['documentFrequencies', 'countMessages'], () => writer.forget('wa'))
      if (own.length === 1) await writer.forget('wx')
      const result = await searcher.search('needle', scope)
      expect(raced()).toBe(true)
      expect(result.hits.map(hit => hit.message.sessionId).filter(id => !own.includes(id as never))).toEqual([])
    })
  })
})

describe.each(TARGETS)('a search whose whole-store scope gains a session mid-search on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it('does not read the new session\'s rows', async () => {
    await twoHandles(target, async (searcher, writer) => {
      // the workspace is every session of the store: its lists need no session filter
      await seed(searcher, ['ga', 'gb'])
      // after the scope's size was asked, before its lists are read, a session of another workspace begins
      const raced = beforeFirst(searcher, ['listIds', 'searchIndexes'], async () => {
        await writer.registerSession({ sessionId: 'gx', workspace: 'x' })
        await writer.append(Array.from({ length: 4 }, (_, index) => message('gx', index + 1, `needle ${index} private to gx`)))
    })
    const result = await searcher.search('needle', { sessionId: 'ga', workspace: 'w' })
    expect(raced()).toBe(true)
    expect(result.hits.length).toBeGreaterThan(0)
    expect(result.hits.map(hit => hit.message.sessionId).filter(id => id === 'gx')).toEqual([])
    })
  })
})

describe('a SQLite list and its whole-store check read one snapshot', () => {
  const target = TARGETS.find(entry => entry.name === 'sqlite')!
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it('does not read a session another process began between the check and the list', async () => {
    await twoHandles(target, async (searcher, writer) => {
      await seed(searcher, ['sa', 'sb'])
      // the other process's writes, prepared now and committed synchronously later (between two statements of one list call)
      type Sync = Record<'upsertSession' | 'addSessions' | 'appendMessages', (input: unknown) => unknown>
      const other = writer.backend as unknown as Sync
      const real = { upsertSession: other.upsertSession.bind(other), addSessions: other.addSessions.bind(other), appendMessages: other.appendMessages.bind(other) }
      const held: { session?: unknown; added?: unknown; rows?: unknown } = {}
      other.upsertSession = input => void (held.session = input)
      other.addSessions = input => void (held.added = input)
      other.appendMessages = rows => {
        held.rows = rows
        return { written: 0, unchanged: 0, replaced: 0 }
      }
      await writer.registerSession({ sessionId: 'sx', workspace: 'x' }).catch(() => undefined)
      await writer.append(Array.from({ length: 4 }, (_, index) => message('sx', index + 1, `needle ${index} private to sx`)))
      Object.assign(other, real)
      expect(held.session).toBeDefined()
      expect(held.added).toBeDefined()
      const backend = searcher.backend as unknown as { conn: { stmt: (sql: string) => unknown }; listIds: (...args: never[]) => unknown }
      const stmt = backend.conn.stmt.bind(backend.conn)
      const listIds = backend.listIds.bind(searcher.backend)
      let listing = false
      let committed = false
      backend.listIds = (...args: never[]) => {
        listing = true
        return listIds(...args)
      }
      backend.conn.stmt = (sql: string) => {
        if (listing && !committed && sql.includes('MATCH')) {
          committed = true
          real.upsertSession(held.session)
          real.addSessions(held.added)
          real.appendMessages(held.rows)
        }
        return stmt(sql)
      }
      const result = await searcher.search('needle', { sessionId: 'sa', workspace: 'w' })
      expect(committed).toBe(true)
      expect(result.hits.length).toBeGreaterThan(0)
      expect(result.hits.map(hit => hit.message.sessionId).filter(id => id === 'sx')).toEqual([])
    })
  })
})

describe.each(TARGETS)('a search whose winners change after they were ranked on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  // a row past the candidate cut is not read again in full (its candidate text is shown): a short one and a long one
  const big = 'x '.repeat(140_000)
  it.each([['a short winner', ''], ['a winner longer than the candidate cut', big]])('returns no row of a session forgotten meanwhile (%s)', async (_kind, pad) => {
    await twoHandles(target, async (searcher, writer) => {
      await seed(searcher, ['fa'])
      await searcher.append([message('fa', 10, `needle zq-SECRET-1 pasted here ${pad}`)])
      await seed(searcher, ['fb'])
      // ranked; then, before the winners are read in full, the session is forgotten
      const raced = beforeFirst(searcher, ['getMessage', 'getMessages', 'messageHashesFor'], () => writer.forget('fa'))
      const result = await searcher.search('needle', { sessionId: 'fa', allSessions: true })
      expect(raced()).toBe(true)
      expect(result.hits.filter(hit => hit.message.sessionId === 'fa').map(hit => hit.message.shadowId)).toEqual([])
      expect(result.hits.length).toBeGreaterThan(0)
    })
  })

  it.each([['a short winner', ''], ['a winner longer than the candidate cut', big]])('shows no text a redaction pass changed meanwhile (%s)', async (_kind, pad) => {
    await twoHandles(target, async (searcher, _writer, location) => {
      await seed(searcher, ['ra'])
      await searcher.append([message('ra', 10, `needle zq-SECRET-1 pasted here ${pad}`)])
      const raced = beforeFirst(searcher, ['getMessage', 'getMessages', 'messageHashesFor'], async () => {
        // a process with a redaction policy opens the store: its open redacts every stored row
        const redacting = await ShadowStore.open(location, { redact: { patterns: ['zq-SECRET-[0-9]+'] } })
        await redacting.close()
      })
      const result = await searcher.search('needle pasted', { sessionId: 'ra' })
      expect(raced()).toBe(true)
      expect(result.hits.map(hit => hit.message.seq)).toContain(10)
      for (const hit of result.hits) expect(`${hit.message.text} ${hit.snippet}`).not.toContain('zq-SECRET')
    })
  })
})

describe.each(TARGETS)('a resident search raced by a writer between its sync and its end on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  /** The first delta read answers with the state before `race`, which then commits: the index is one write behind. */
  function afterFirstSync(store: ShadowStore, race: () => Promise<unknown>): () => boolean {
    const backend = store.backend as unknown as Record<string, (...args: never[]) => unknown>
    const real = backend['sessionChanges']!.bind(store.backend)
    let ran = false
    backend['sessionChanges'] = async (...args: never[]) => {
      const answer = await real(...args)
      if (!ran) {
        ran = true
        await race()
      }
      return answer
    }
    return () => ran
  }

  it('shows no text a redaction pass changed meanwhile', async () => {
    await twoHandles(target, async (searcher, _writer, location) => {
      await seed(searcher, ['ra'])
      await searcher.append([message('ra', 10, 'needle zq-SECRET-1 pasted here')])
      const raced = afterFirstSync(searcher, async () => {
        const redacting = await ShadowStore.open(location, { redact: { patterns: ['zq-SECRET-[0-9]+'] } })
        await redacting.close()
      })
      const result = await searcher.search('needle pasted', { sessionId: 'ra' })
      expect(raced()).toBe(true)
      expect(result.hits.map(hit => hit.message.seq)).toContain(10)
      for (const hit of result.hits) expect(`${hit.message.text} ${hit.snippet} ${hit.message.eventJson}`).not.toContain('zq-SECRET')
    }, true)
  })

  it('returns no row removed meanwhile, and the rows appended meanwhile', async () => {
    await twoHandles(target, async (searcher, writer) => {
      await seed(searcher, ['rc'])
      const raced = afterFirstSync(searcher, async () => {
        await writer.remove('rc', [1, 2])
        await writer.append([message('rc', 9, 'needle written meanwhile')])
      })
      const result = await searcher.search('needle', { sessionId: 'rc' })
      expect(raced()).toBe(true)
      expect(result.hits.map(hit => hit.message.seq).toSorted()).toEqual([3, 4, 9])
    }, true)
  })

  it('returns no row of a session forgotten meanwhile', async () => {
    await twoHandles(target, async (searcher, writer) => {
      await seed(searcher, ['rf'])
      afterFirstSync(searcher, () => writer.forget('rf'))
      const result: unknown = await searcher.search('needle', { sessionId: 'rf' }).catch((error: unknown) => error)
      // the session is gone: no hit of it (the search finds it missing, or answers empty)
      if (result instanceof Error) expect(result.message).toMatch(/not in the shadow store/)
      else expect((result as { hits: unknown[] }).hits).toEqual([])
    }, true)
  })
})
