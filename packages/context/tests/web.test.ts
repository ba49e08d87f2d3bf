/**
 * The web UI without a browser (the CI slice of `npm run test:web`): the host read endpoint behind
 * dsh's real API gateway on a real composition, and the built browser module (lib/client.js)
 * loaded into a stand-in `__ModuleLoader__` with the real React, its node definitions fed the
 * session's real log, its views rendered with react-dom/server from the real projection value, and
 * its API calls carried to the gateway.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import TypertGateway from '@deepseek-ai/dsh-api-gateway'
import TypertRegistry from '@deepseek-ai/dsh-typert-registry'
import type { SessionEvent } from '@deepseek-ai/dsh-session'
import { codingSession, type DshHarness, ScriptedModel } from '@dsh-shadow/testing'
import * as React from 'react'
import * as JsxRuntime from 'react/jsx-runtime'
import { renderToStaticMarkup } from 'react-dom/server'
import { beforeAll, afterAll, describe, expect, it } from 'vitest'
import { PROJECTION_KEY, READ_TOOL, SEARCH_TOOL, ShadowContextReader, ShadowWeb, type ShadowContextView } from '../src/index.ts'
import { recallHarness } from './support.ts'

const CLIENT = fileURLToPath(new URL('../lib/client.js', import.meta.url))
const SHARED_MODULES = ['react', 'react/jsx-runtime', 'react-dom', 'react-dom/client', '@deepseek-ai/cordis', '@deepseek-ai/dsh-client-ui-slots', '@deepseek-ai/dsh-client-ui-primitives']

interface Gateway {
  invokeRpc(endpoint: string, payload: unknown, signal?: AbortSignal): Promise<{ ok: boolean; value?: unknown; error?: { code: string; message: string } }>
  claimsEndpoint(endpoint: string): boolean
}
type Reply<T> = { ok: true; value: T } | { ok: false; error: { code: string; message: string } }
interface Original { shadowId: string; seq: number; text: string; elidedBy: string | null }

let harness: DshHarness
let home: string
let gateway: Gateway
let main: string
let other: string
let view: ShadowContextView
let events: readonly SessionEvent[]

/** The gateway's wire path, exactly what the browser's `connection.rpc.call('/api', …)` reaches. */
async function call<T>(method: string, sessionId: string, request: unknown): Promise<Reply<T>> {
  const result = await gateway.invokeRpc(`shadowContext/${method}`, { args: { sessionId, request } })
  if (!result.ok) return { ok: false, error: result.error! }
  return result.value as Reply<T>
}

async function storeText(shadowId: string): Promise<string> {
  const message = await (await harness.ctx.shadowCapture.opened()).message(shadowId)
  if (message === undefined) throw new Error(`no ${shadowId} in the store`)
  return message.text
}

beforeAll(async () => {
  const scenario = codingSession({ turns: 60, seed: 11, outputChars: 1_200 })
  const model = new ScriptedModel({ contextWindow: 16_000 })
  home = mkdtempSync(join(tmpdir(), 'shadow-web-'))
  harness = await recallHarness({
    home,
    capture: { home },
    tools: scenario.tools(),
    model,
    // dsh's typert registry and API gateway, then the package's own host row reading the capture's store
    plugins: [{ plugin: TypertRegistry }, { plugin: TypertGateway }],
    extraPlugins: [{ plugin: ShadowWeb, config: { home } }],
  })
  gateway = (harness.ctx as unknown as { typertGateway: Gateway }).typertGateway
  const agent = await harness.createAgent({ sessionId: 'web-main' })
  await harness.play(agent, scenario.turns)
  model.enqueue({ kind: 'tools', calls: [{ name: SEARCH_TOOL, args: { query: 'staging database port' } }] }, { kind: 'text', text: 'found it' })
  await harness.send(agent, 'Which port did we pick for staging?')
  const second = await harness.createAgent({ sessionId: 'web-other' })
  await harness.play(second, codingSession({ turns: 30, seed: 99, outputChars: 1_200, plantFacts: false }).turns)
  await harness.ctx.shadowCapture.flush()
  main = agent.session.id
  other = second.session.id
  events = agent.session.events
  view = harness.ctx.sessionProjections.snapshot(agent.session).values[PROJECTION_KEY] as ShadowContextView
}, 180_000)

afterAll(async () => {
  await harness?.dispose()
  if (home !== undefined) rmSync(home, { recursive: true, force: true })
})

describe('host read endpoint through dsh\'s API gateway', () => {
  it('is claimed by the gateway from the typertRemote binding and Remote markers', () => {
    expect(gateway.claimsEndpoint('shadowContext/read')).toBe(true)
    expect(gateway.claimsEndpoint('shadowContext/search')).toBe(true)
    expect(gateway.claimsEndpoint('shadowContext/drop')).toBe(false)
  })

  it('reads a checkpoint\'s originals page by page, exactly as stored', async () => {
    expect(view.active).toBe(true)
    expect(view.checkpointCount).toBeGreaterThanOrEqual(2)
    const checkpoint = view.checkpoints.find(candidate => candidate.kind === 'digest' && candidate.messages > 6)!
    const first = await call<{ total: number; start: number; messages: Original[] }>('read', main, { checkpoint: checkpoint.id, start: 0, limit: 5 })
    if (!first.ok) throw new Error(first.error.message)
    expect(first.value.total).toBe(checkpoint.messages)
    expect(first.value.messages).toHaveLength(5)
    const second = await call<{ total: number; start: number; messages: Original[] }>('read', main, { checkpoint: checkpoint.id, start: 5, limit: 5 })
    if (!second.ok) throw new Error(second.error.message)
    expect(second.value.start).toBe(5)
    const ids = [...first.value.messages, ...second.value.messages].map(message => message.shadowId)
    expect(new Set(ids).size).toBe(ids.length)
    for (const message of [...first.value.messages, ...second.value.messages]) {
      expect(message.text).toBe(await storeText(message.shadowId))
      expect(message.elidedBy).toBe(checkpoint.id)
    }
    expect(ids[0]).toBe(checkpoint.shadowFrom)
  })

  it('searches in English and Chinese within the caller\'s session only', async () => {
    for (const query of ['staging database port', '缓存过期时间']) {
      const found = await call<{ hits: Array<{ shadowId: string; snippet: string }> }>('search', main, { query, limit: 5 })
      if (!found.ok) throw new Error(found.error.message)
      expect(found.value.hits.length, query).toBeGreaterThan(0)
      expect(found.value.hits.every(hit => hit.shadowId.startsWith(`${view.checkpoints[0]!.id.split('.')[0]!}.`))).toBe(true)
    }
    // the other session never planted these facts: it finds only its own messages, never the main session's
    const tagOf = (id: string): string => id.split('.')[0]!
    const mainTag = tagOf(view.checkpoints[0]!.id)
    for (const query of ['缓存过期时间统一改成九十秒', 'staging database port 5433']) {
      const elsewhere = await call<{ hits: Array<{ shadowId: string }> }>('search', other, { query })
      if (!elsewhere.ok) throw new Error(elsewhere.error.message)
      expect(elsewhere.value.hits.filter(hit => tagOf(hit.shadowId) === mainTag)).toEqual([])
    }
  })

  it('searches and reads the whole workspace with scope: workspace, and refuses an unknown scope', async () => {
    const mainTag = view.checkpoints[0]!.id.split('.')[0]!
    // the other session of the same working directory finds the main session's facts only when asked to
    const wide = await call<{ scope: string; hits: Array<{ shadowId: string; sessionId: string }> }>('search', other, { query: 'staging database port 5433', scope: 'workspace' })
    if (!wide.ok) throw new Error(wide.error.message)
    expect(wide.value.scope).toBe('workspace')
    const found = wide.value.hits.find(hit => hit.shadowId.startsWith(`${mainTag}.`))
    expect(found?.sessionId).toBe(main)
    const narrow = await call<{ scope: string; hits: Array<{ shadowId: string }> }>('search', other, { query: 'staging database port 5433' })
    expect(narrow.ok && narrow.value.scope).toBe('session')
    expect(narrow.ok && narrow.value.hits.some(hit => hit.shadowId === found!.shadowId)).toBe(false)
    // what a workspace hit names opens with the same scope, exactly as stored, and only with it
    const read = await call<{ messages: Original[] }>('read', other, { id: found!.shadowId, before: 0, after: 0, scope: 'workspace' })
    if (!read.ok) throw new Error(read.error.message)
    expect(read.value.messages[0]!.text).toBe(await storeText(found!.shadowId))
    expect(await call('read', other, { id: found!.shadowId, before: 0, after: 0 })).toMatchObject({ ok: false, error: { code: 'NOT_FOUND' } })
    expect(await call('search', other, { query: 'port', scope: 'everything' })).toMatchObject({ ok: false, error: { code: 'INVALID_INPUT' } })
  })

  it('refuses what the model tools refuse, with the same typed errors', async () => {
    const checkpoint = view.checkpoints[0]!.id
    const cases: Array<[string, string, unknown, string]> = [
      ['read', other, { checkpoint }, 'NOT_FOUND'], // another session's checkpoint
      ['read', other, { id: view.checkpoints[0]!.shadowFrom }, 'NOT_FOUND'], // another session's message
      ['read', main, { id: 'not an id' }, 'INVALID_INPUT'],
      ['read', main, { checkpoint, id: view.checkpoints[0]!.shadowFrom }, 'INVALID_INPUT'], // two selectors
      ['read', main, { checkpoint, start: 1e9 }, 'INVALID_INPUT'],
      ['read', main, { checkpoint, limit: 1000 }, 'INVALID_INPUT'],
      ['read', main, { checkpoint, cursor: 'x' }, 'INVALID_INPUT'],
      ['search', main, { query: '' }, 'INVALID_INPUT'],
      ['search', main, { query: 'x', sql: 'select * from messages' }, 'INVALID_INPUT'],
      ['search', main, 'staging', 'INVALID_INPUT'],
      ['search', main, { query: 'x', since: 'next tuesday-ish' }, 'INVALID_INPUT'],
    ]
    for (const [method, sessionId, request, code] of cases) {
      const reply = await call(method, sessionId, request)
      expect(reply, `${method} ${JSON.stringify(request)}`).toMatchObject({ ok: false, error: { code } })
    }
    // an unknown session is refused by the gateway's session lookup before the method runs
    expect((await gateway.invokeRpc('shadowContext/read', { args: { sessionId: 'no-such-session', request: { checkpoint } } })).ok).toBe(false)
    // a direct caller that hands over no real session gets FORBIDDEN, not data
    const reader = (harness.ctx as unknown as { shadowContextReader: ShadowContextReader }).shadowContextReader
    expect(await reader.read({ id: 42 }, { checkpoint })).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } })
  })

  it('says UNAVAILABLE when the store cannot be opened', async () => {
    // a second reader in its own realm, pointed at a store that does not exist
    const realm = harness.ctx.isolate('shadowContextReader')
    const fiber = realm.plugin(ShadowContextReader, { home, path: 'nowhere/missing.db' })
    await fiber
    const missing = realm.get('shadowContextReader') as ShadowContextReader
    expect(missing.path).toBe(join(home, 'nowhere', 'missing.db'))
    expect(await missing.search({ id: main }, { query: 'port' })).toMatchObject({ ok: false, error: { code: 'UNAVAILABLE' } })
    await fiber.dispose()
  })
})

interface Registration { options: Record<string, unknown>; component: (props: Record<string, unknown>) => React.ReactElement | null }
interface Definition {
  kind: string
  match(event: SessionEvent): { id: string; role: 'start' | 'update' } | null
  start(context: unknown, match: unknown): unknown
  update(context: unknown, match: unknown): unknown
  buildViewNode(context: unknown): { kind: string; anchorSeq: number; visibility: string; data: Record<string, unknown> } | null
}

/** Stands in for dsh's `ManualCompactionNodeView` (priority 0): shows which props reached it. */
const DSH_MANUAL_ROW: Registration = {
  options: { name: 'conversation.chat.node', key: 'manual-compaction' },
  component: props => React.createElement('div', { 'data-dsh-manual-row': (props['node'] as { id: string }).id, 'data-props': Object.keys(props).toSorted().join(',') }),
}
/** dsh's own renderer of an automatic compaction row. */
const DSH_COMPACTION_ROW: Registration = {
  options: { name: 'conversation.chat.node', key: 'compaction' },
  component: props => React.createElement('div', { 'data-dsh-compaction-row': (props['node'] as { id: string }).id, 'data-props': Object.keys(props).toSorted().join(',') }),
}
/** The renderers dsh itself registered (a test may take one away). */
let dshRows: Registration[] = [DSH_MANUAL_ROW, DSH_COMPACTION_ROW]

describe('browser module (lib/client.js) in a stand-in module loader', () => {
  let exports: { inject: string[]; apply(ctx: unknown): void }
  const requested = new Set<string>()
  const registrations: Registration[] = []
  const definitions: Definition[] = []

  beforeAll(() => {
    expect(existsSync(CLIENT), 'lib/client.js is built by `npm run build`').toBe(true)
    const source = readFileSync(CLIENT, 'utf8')
    let registered: { id: string; factory(require: (name: string) => unknown): typeof exports } | undefined
    const window = { __ModuleLoader__: { load: (registration: NonNullable<typeof registered>) => { registered = registration } } }
    new Function('window', source)(window)
    expect(registered?.id).toBe('dsh-shadow-context')
    const modules: Record<string, unknown> = { react: React, 'react/jsx-runtime': JsxRuntime }
    exports = registered!.factory(name => {
      requested.add(name)
      if (!(name in modules)) throw new Error(`client.js asked for ${name}, which the web app's module table does not give it`)
      return modules[name]
    })
    const ctx = {
      slots: {
        inject: (_key: string, callback: () => unknown) => callback(),
        register: (options: Record<string, unknown>, component: Registration['component']) => registrations.push({ options, component }),
        // the raw ledger, priority ascending as rc.8's registry keeps it, with dsh's own row renderers
        entries: (key: string) => [...registrations, ...dshRows].filter(entry => entry.options['name'] === key)
          .toSorted((a, b) => Number(a.options['priority'] ?? 0) - Number(b.options['priority'] ?? 0)),
      },
      conversationEvents: { register: (definition: Definition) => definitions.push(definition) },
      // the browser's connection, carried to the host gateway in-process
      connection: { rpc: { call: (channel: string, endpoint: string, payload: unknown) => (channel === '/api' ? gateway.invokeRpc(endpoint, payload) : Promise.reject(new Error(channel))) } },
    }
    exports.apply(ctx)
  })

  it('requires only shared modules and declares what it injects', () => {
    expect([...requested].every(name => SHARED_MODULES.includes(name))).toBe(true)
    expect(requested.has('react')).toBe(true)
    expect(exports.inject).toEqual(expect.arrayContaining(['slots', 'conversationEvents', 'connection']))
    expect(registrations.map(registration => registration.options['key'] ?? registration.options['id'])).toEqual(['shadow-recall', 'compaction', 'manual-compaction', 'shadow-context'])
    // dsh's own compaction renderers sit at the default priority 0; the lowest live entry renders
    expect(registrations[1]!.options['priority']).toBeLessThan(0)
    expect(registrations[2]!.options['priority']).toBeLessThan(0)
    expect(definitions.map(definition => definition.kind)).toEqual(['shadow-recall']) // no checkpoint node of our own
    expect(Buffer.byteLength(readFileSync(CLIENT))).toBeLessThan(100_000) // no framework inside
  })

  /** What the conversation engine does with a complete window: match, start/update in seq order, build. */
  function nodesOf(definition: Definition, log: readonly SessionEvent[] = events): Array<NonNullable<ReturnType<Definition['buildViewNode']>>> {
    const contexts = new Map<string, { key: string; kind: string; id: string; start: unknown; matches: unknown[]; state: unknown }>()
    for (const event of log) {
      const matched = definition.match(event)
      if (matched === null) continue
      const match = { event, role: matched.role, location: { kind: 'session' } }
      let context = contexts.get(matched.id)
      if (context === undefined) {
        context = { key: `${definition.kind}:${matched.id}`, kind: definition.kind, id: matched.id, start: undefined, matches: [], state: undefined }
        contexts.set(matched.id, context)
      }
      context.matches.push(match)
      if (matched.role === 'start') {
        context.start = match
        context.state = definition.start(context, match)
      } else if (context.state !== undefined) context.state = definition.update(context, match)
    }
    return [...contexts.values()].flatMap(context => definition.buildViewNode(context) ?? [])
  }

  /**
   * What dsh's own `compaction` definition builds for each automatic compaction of the log: the
   * rc.8 `CompactionSummaryNode` payload, keyed by the compaction id (our reading of that contract).
   */
  function dshCompactionNodes(): Array<{ id: string; data: Record<string, unknown> }> {
    const summaries = new Map(events.filter(event => event.type === 'compaction/summary').map(event => [String(event.data.compactionId), event]))
    return events.filter(event => event.type === 'user/message' && typeof event.surfaceOp === 'object').map(event => {
      const id = String((event.data as unknown as { source: { compactionId: string } }).source.compactionId)
      const summary = summaries.get(id)!.data as unknown as { summary: Array<{ type: string; text?: string }>; shadowedSeqs: number[]; shadowedTokenCount: number }
      return {
        id,
        data: {
          kind: 'compaction', seq: event.seq, time: event.time, summary: summary.summary.map(block => block.text ?? '').join(''),
          summaryEventSeq: summaries.get(id)!.seq, shadowedItemCount: summary.shadowedSeqs.length, shadowedTokenCount: summary.shadowedTokenCount,
        },
      }
    })
  }

  it('makes one recall marker per recall and no checkpoint node beside dsh\'s compaction rows', () => {
    expect(dshCompactionNodes().map(node => node.id)).toEqual(view.checkpoints.map(checkpoint => checkpoint.id))
    const recalls = nodesOf(definitions.find(definition => definition.kind === 'shadow-recall')!)
    const calls = events.filter(event => event.type === 'tool/call' && (event.data.name === SEARCH_TOOL || event.data.name === READ_TOOL))
    expect(recalls).toHaveLength(calls.length)
    expect(recalls.map(node => node.data['seq'])).toEqual(view.recalls.map(recall => recall.seq))
  })

  it('renders dsh\'s compaction row as our checkpoint pointer, collapsed, under dsh\'s title', () => {
    const node = dshCompactionNodes()[1]!
    const checkpoint = view.checkpoints.find(candidate => candidate.id === node.id)!
    const Component = registrations.find(registration => registration.options['key'] === 'compaction')!.component
    const t = (key: string, params?: Record<string, unknown>): string => (key === 'message.compaction' ? '上下文已压缩' : `${key} ${JSON.stringify(params)}`)
    const html = renderToStaticMarkup(React.createElement(Component, { node, t, sessionId: main, useProjection: () => view }))
    expect(html).toContain(`data-shadow-checkpoint="${checkpoint.id}"`)
    expect(html).toContain('data-shadow-compaction="shadow-context"')
    expect(html).toContain('上下文已压缩 ·') // dsh's own words, in the UI's language
    expect(html).toContain('data-shadow-expanded="false"')
    expect(html).toContain(`${checkpoint.messages} messages, ${checkpoint.shadowedTokens.toLocaleString('en-US')} tokens off the context → ${checkpoint.digestTokens.toLocaleString('en-US')} in their place · ${checkpoint.shadowFrom} … ${checkpoint.shadowTo}`)
    expect(html).not.toContain('data-shadow-original')
    // no projection in this browser: the footer in dsh's summary still says it is ours, with its seqs
    const bare = renderToStaticMarkup(React.createElement(Component, { node, sessionId: main, useProjection: () => undefined }))
    expect(bare).toContain(`data-shadow-checkpoint="${checkpoint.id}"`)
    expect(bare).toContain(`seqs ${checkpoint.seqFrom}–${checkpoint.seqTo}`)
    expect(bare).toContain('Context compacted ·') // no locale seat: English
    // a mask stub's footer has its seqs right after the id
    const mask = { id: 'k7q2mz.c9', data: { ...node.data, summary: '[Shadow Context masked k7q2mz.c9] tool outputs stored verbatim\n[shadow k7q2mz.c9] seqs 41–57 · 2026-12-01 09:00 → 2026-12-01 09:05 UTC · shadow_read {"checkpoint":"k7q2mz.c9"}' } }
    const masked = renderToStaticMarkup(React.createElement(Component, { node: mask, sessionId: main, useProjection: () => undefined }))
    expect(masked).toContain('data-shadow-checkpoint="k7q2mz.c9"')
    expect(masked).toContain('seqs 41–57')
    // another engine's compaction (compaction-basic): dsh's own row, with the props we got, never our pointer
    const basic = { id: 'f900d069-7a31-4bca-a96c-cd028e04c996', data: { ...node.data, summary: 'Earlier turns: the build cache notes.', shadowedItemCount: 4, shadowedTokenCount: 4749 } }
    for (const value of [view, undefined, { ...view, active: false }]) {
      const row = renderToStaticMarkup(React.createElement(Component, { node: basic, sessionId: main, useProjection: () => value }))
      expect(row).toBe(`<div data-dsh-compaction-row="${basic.id}" data-props="node,sessionId,useProjection"></div>`)
    }
    // a dsh without a renderer of its own: a row like dsh's
    dshRows = [DSH_MANUAL_ROW]
    try {
      const row = renderToStaticMarkup(React.createElement(Component, { node: basic, sessionId: main, useProjection: () => view }))
      expect(row).toContain('data-shadow-compaction="other"')
      expect(row).toContain('Context compacted</span><span class="dsc-facts">· Compacted 4 history items (~4749 tokens)')
      expect(row).not.toContain('data-shadow-checkpoint')
    } finally {
      dshRows = [DSH_MANUAL_ROW, DSH_COMPACTION_ROW]
    }
    // a payload this plugin does not know renders nothing rather than a wrong row
    expect(renderToStaticMarkup(React.createElement(Component, { node: { id: 'x', data: { seq: 'no' } }, sessionId: main, useProjection: () => view }))).toBe('')
  })

  it('renders a manual /compact row as our checkpoint once ours landed, and hands every other state to dsh\'s renderer', () => {
    const Component = registrations.find(registration => registration.options['key'] === 'manual-compaction')!.component
    const auto = dshCompactionNodes()[0]!
    const checkpoint = view.checkpoints.find(candidate => candidate.id === auto.id)!
    const command = { kind: 'command', seq: auto.data['seq'] as number - 2, time: 0, commandId: 'command-1', name: 'compact', args: null, outcome: { ok: true, text: 'Compacted.' } }
    // dsh keys this node by the command; the compaction id comes from our footer, else from the projection by seq
    const node = (compaction: unknown) => ({ id: 'command-1', data: { command, compaction } })
    for (const [compaction, value] of [[auto.data, view], [auto.data, undefined], [{ ...auto.data, summary: null }, view]] as const) {
      const html = renderToStaticMarkup(React.createElement(Component, { node: node(compaction), sessionId: main, useProjection: () => value }))
      expect(html).toContain(`data-shadow-checkpoint="${checkpoint.id}"`)
      expect(html).toContain('data-shadow-compaction="shadow-context"')
      expect(html).toContain(value === undefined ? `seqs ${checkpoint.seqFrom}–${checkpoint.seqTo}` : `${checkpoint.shadowFrom} … ${checkpoint.shadowTo}`)
      expect(html).toContain(`${checkpoint.messages} messages`)
      expect(html).not.toContain('data-dsh-manual-row')
    }
    // still running, nothing compacted, another engine's, or unknowable: dsh's row, with the props we got
    const basic = { ...auto.data, summary: 'Earlier turns: the build cache notes.' }
    for (const [compaction, value] of [[null, view], [basic, view], [{ ...auto.data, summary: null }, undefined], [{ ...auto.data, summary: null, seq: -1 }, view]] as const) {
      const html = renderToStaticMarkup(React.createElement(Component, { node: node(compaction), sessionId: main, useProjection: () => value, t: (key: string) => key }))
      expect(html).toBe('<div data-dsh-manual-row="command-1" data-props="node,sessionId,t,useProjection"></div>')
    }
  })

  it('renders the recall marker with the ids that came back', () => {
    const node = nodesOf(definitions.find(definition => definition.kind === 'shadow-recall')!).at(-1)!
    const recall = view.recalls.at(-1)!
    const html = renderToStaticMarkup(React.createElement(registrations.find(registration => registration.options['key'] === 'shadow-recall')!.component, { node, sessionId: main, useProjection: () => view }))
    expect(html).toContain('Shadow Context searched &quot;staging database port&quot;')
    expect(recall.ids.length).toBeGreaterThan(0)
    for (const id of recall.ids.slice(0, 24)) expect(html).toContain(`data-shadow-link="${id}"`)
    // one line of what came back, in plain text
    expect(recall.snippet).not.toBeNull()
    expect(recall.snippet!.includes('\n') || recall.snippet!.includes('**')).toBe(false)
    expect(html).toContain('data-shadow-recall-snippet')
    // the same search right after itself collapses into one short line
    const again = { ...recall, seq: recall.seq + 1 }
    const repeated = { ...view, recalls: [...view.recalls, again] }
    const second = renderToStaticMarkup(React.createElement(registrations.find(registration => registration.options['key'] === 'shadow-recall')!.component, { node: { ...node, data: { ...node.data, seq: again.seq } }, sessionId: main, useProjection: () => repeated }))
    expect(second).toContain('data-shadow-recall-repeat')
    expect(second).toContain('the same search again')
    expect(second).not.toContain('data-shadow-link')
  })

  it('renders the panel totals and last failure from the value, and hides it for a session without Shadow Context', async () => {
    const dock = registrations.find(registration => registration.options['id'] === 'shadow-context')!
    const injected = (dock.options['inject'] as (sessionId: string) => Record<string, unknown>)(main)
    const render = (value: unknown): string => renderToStaticMarkup(React.createElement(dock.component, { sessionId: main, useProjection: () => value, ...injected }))
    // what was saved, in plain words: tokens off the context, what the checkpoints cost, what recalls brought back
    expect(view.savedTokens).toBe(view.checkpoints.filter(checkpoint => checkpoint.kind !== 'index').reduce((sum, checkpoint) => sum + checkpoint.shadowedTokens, 0))
    expect(view.checkpointTokens).toBeGreaterThan(0)
    expect(view.checkpointTokens).toBeLessThan(view.savedTokens)
    expect(render(view)).toContain(`${view.savedTokens.toLocaleString('en-US')} tokens kept off the context by ${view.checkpointCount} checkpoints (which cost ${view.checkpointTokens.toLocaleString('en-US')}) · ${view.recallCount} recalls brought back ${view.recalledMessages.toLocaleString('en-US')} originals`)
    expect(render(view)).not.toContain('data-shadow-failure')
    expect(render({ ...view, lastFailure: { seq: 9, time: 0, message: 'store is read-only' } })).toContain('store is read-only')
    expect(render({ ...view, active: false })).toBe('')
    expect(render(undefined)).toBe('')

    // the panel's API face goes through the connection to the host endpoint
    const api = injected['shadow'] as { read(sessionId: string, request: unknown): Promise<Reply<{ messages: Original[] }>>; search(sessionId: string, request: unknown): Promise<Reply<{ hits: Array<{ shadowId: string }> }>> }
    const checkpoint = view.checkpoints[0]!
    const page = await api.read(main, { checkpoint: checkpoint.id, start: 0, limit: 3 })
    if (!page.ok) throw new Error(page.error.message)
    for (const message of page.value.messages) expect(message.text).toBe(await storeText(message.shadowId))
    const hits = await api.search(main, { query: '缓存过期时间' })
    expect(hits.ok && hits.value.hits.length > 0).toBe(true)
    expect(await api.read('no-such-session', { checkpoint: checkpoint.id })).toMatchObject({ ok: false })
  })
})

describe('after retention (runs last: it empties originals of the shared session)', () => {
  it('marks originals retention dropped instead of passing off empty text as the stored original', async () => {
    const store = await harness.ctx.shadowCapture.opened()
    const report = await store.gc({ maxAgeMs: 0, now: Date.now() + 60_000 })
    expect(report.rows).toBeGreaterThan(0)
    const checkpoint = view.checkpoints.find(candidate => candidate.kind === 'digest')!
    const page = await call<{ messages: Array<Original & { expiredAt: number | null }> }>('read', main, { checkpoint: checkpoint.id, start: 0, limit: 5 })
    if (!page.ok) throw new Error(page.error.message)
    expect(page.value.messages.length).toBeGreaterThan(0)
    expect(page.value.messages.every(message => message.expiredAt !== null && message.text === '')).toBe(true)
  })
})
