/**
 * Sessions stay apart through the model-facing tools on a real dsh composition (capture, engine,
 * recall): the scripted model calls shadow_search / shadow_read exactly as a model would, and the
 * test reads what came back in the tool results. Three sessions share one process: A and C in one
 * workspace, B in another, plus a fork of A. Each plants one fact early (compacted away, so only
 * recall reaches it) and one late (still on the surface).
 */
import { statSync } from 'node:fs'
import { join } from 'node:path'
import type { Agent } from '@deepseek-ai/dsh-agent'
import { SessionId } from '@deepseek-ai/dsh-session'
import { sessionTag } from '@dsh-shadow/store'
import { codingSession, type DshHarness, ScriptedModel, type ScriptedTool } from '@dsh-shadow/testing'
import { describe, expect, it } from 'vitest'
import { READ_TOOL, SEARCH_TOOL } from '../src/index.ts'
import { cleanupAfterEach, recallHarness } from './support.ts'

const { harnesses } = cleanupAfterEach('shadow-isolation-')

/** Words no filler text contains: one early (to be shadowed) and one late (still visible) per session. */
const FACTS = {
  a: { early: 'marmalade', late: 'quasarfox' },
  b: { early: 'tangerine', late: 'zeppelinowl' },
  c: { early: 'pistachio', late: 'nebulamink' },
} as const
/** Planted in A after the fork point: the fork must never see it. */
const A_AFTER_FORK = 'obsidianyak'
const FORK_OWN = 'lanternemu'
/** Ids of a session that never existed: what "not found" must look like for anything out of scope. */
const NEVER_ID = 'zzzzzz.4'
const NEVER_CHECKPOINT = 'zzzzzz.c1'

type Name = keyof typeof FACTS

interface World {
  readonly harness: DshHarness
  /** Ends the fork's agent (the harness ends its own). */
  dispose(): Promise<void>
  readonly agents: Record<Name | 'fork', Agent>
  readonly tags: Record<Name | 'fork', string>
  /** Checkpoint ids of each session (from the store: what a leaked footer would show). */
  readonly checkpoints: Record<Name, string[]>
  readonly workspaces: { readonly one: string; readonly two: string }
}

/** Shadow ids listed in a shadow_search result, best first. */
function hitIds(text: string): string[] {
  return [...text.matchAll(/^\d+\. (\S+) ·/gm)].map(match => match[1]!)
}

const tagOf = (shadowId: string): string => shadowId.slice(0, shadowId.lastIndexOf('.'))

/** One model turn that calls a tool; returns the tool result as the model received it. */
async function callTool(harness: DshHarness, agent: Agent, name: string, args: Record<string, unknown>): Promise<string> {
  let result: string | undefined
  harness.model.enqueue({ kind: 'tools', calls: [{ name, args }] }, request => {
    result = request.lastText()
    return { kind: 'text', text: 'noted' }
  })
  await harness.send(agent, 'Check the history, please.') // never names the fact: the prompt itself is searchable
  if (result === undefined) throw new Error(`${name} did not run`)
  return result
}

const search = (world: World, who: Name | 'fork', query: string): Promise<string> => callTool(world.harness, world.agents[who], SEARCH_TOOL, { query, limit: 20 })
const read = (world: World, who: Name | 'fork', args: Record<string, unknown>): Promise<string> => callTool(world.harness, world.agents[who], READ_TOOL, args)

/** The surface the model would be sent now. */
function surface(agent: Agent): string {
  return agent.session.deriveMessages().map(message => JSON.stringify(message.content)).join('\n')
}

async function plant(harness: DshHarness, agent: Agent, word: string): Promise<void> {
  harness.model.enqueue({ kind: 'text', text: 'Noted.' })
  await harness.send(agent, `Remember this for later: the vault passphrase of this project is ${word}.`)
}

/** The scenario's tools, with outputs of their own for every session (a scenario's replay runs out after one). */
const TOOLS: ScriptedTool[] = ['shell', 'read_file', 'write_file'].map(name => ({
  name,
  description: `${name} in the workspace`,
  run: args => Array.from({ length: 24 }, (_, line) => `${name} ${JSON.stringify(args)} line ${line}: ok, nothing unusual here`).join('\n'),
}))

async function buildWorld(scope: 'session' | 'workspace'): Promise<World> {
  const scenario = codingSession({ turns: 14, seed: 61, plantFacts: false })
  const harness = await recallHarness({ tools: TOOLS, model: new ScriptedModel({ contextWindow: 12_000 }), recall: { scope } })
  harnesses.push(harness)
  const workspaces = { one: join(harness.home, 'repo-one'), two: join(harness.home, 'repo-two') }
  const a = await harness.createAgent({ sessionId: 'iso-a', cwd: workspaces.one })
  const b = await harness.createAgent({ sessionId: 'iso-b', cwd: workspaces.two })
  const c = await harness.createAgent({ sessionId: 'iso-c', cwd: workspaces.one })
  for (const [name, agent] of [['a', a], ['b', b], ['c', c]] as const) {
    await plant(harness, agent, FACTS[name].early)
    await harness.play(agent, scenario.turns)
    await plant(harness, agent, FACTS[name].late)
    // both kinds of row are exercised: one only recall can reach, one the model still sees
    expect(surface(agent), `${name}: early fact compacted away`).not.toContain(FACTS[name].early)
    expect(surface(agent), `${name}: late fact still visible`).toContain(FACTS[name].late)
  }
  // Fork A here (as dsh's fork does: the parent's events as seed); then A goes on without it.
  const seed = a.session.events.slice()
  const handle = await harness.ctx.agents.create({
    sessionId: SessionId('iso-a-fork'),
    seed,
    meta: { cwd: workspaces.one, parentSession: a.session.id, seedLength: seed.length },
    agentOptions: { provider: harness.route.provider, model: harness.route.model },
  })
  await plant(harness, a, A_AFTER_FORK)
  await plant(harness, handle.agent, FORK_OWN)
  const capture = harness.ctx.shadowCapture
  await capture.flush()
  const checkpoints = {
    a: (await capture.store.checkpoints('iso-a')).map(checkpoint => checkpoint.checkpointId),
    b: (await capture.store.checkpoints('iso-b')).map(checkpoint => checkpoint.checkpointId),
    c: (await capture.store.checkpoints('iso-c')).map(checkpoint => checkpoint.checkpointId),
  }
  for (const list of Object.values(checkpoints)) expect(list.length).toBeGreaterThan(0)
  return {
    harness,
    dispose: () => handle.dispose(),
    agents: { a, b, c, fork: handle.agent },
    tags: { a: sessionTag('iso-a'), b: sessionTag('iso-b'), c: sessionTag('iso-c'), fork: sessionTag('iso-a-fork') },
    checkpoints,
    workspaces,
  }
}

/** The one hit of a word in its owner's own search (the positive control every negative needs). */
async function ownHit(world: World, who: Name, word: string): Promise<string> {
  const ids = hitIds(await search(world, who, word))
  expect(ids.length, `${who} finds its own "${word}"`).toBeGreaterThan(0)
  expect(ids.every(id => tagOf(id) === world.tags[who])).toBe(true)
  return ids[0]!
}

/** Reading `target` out of scope answers NOT_FOUND exactly as for an id that never existed: no existence leak. */
async function notFoundAsIfNever(world: World, who: Name | 'fork', key: 'id' | 'checkpoint', target: string): Promise<void> {
  const never = key === 'id' ? NEVER_ID : NEVER_CHECKPOINT
  const leaked = await read(world, who, { [key]: target })
  expect(leaked, `${who} reading ${target}`).toMatch(/NOT_FOUND/)
  expect(leaked.replaceAll(target, '<id>')).toBe((await read(world, who, { [key]: never })).replaceAll(never, '<id>'))
}

describe('session isolation through shadow_search and shadow_read', () => {
  it('keeps each session to its own rows by default, without hinting that others exist, and a fork to its parent below the fork point', async () => {
    const world = await buildWorld('session')
    const names: Name[] = ['a', 'b', 'c']
    const ids = new Map<string, string>()
    for (const name of names) {
      for (const word of [FACTS[name].early, FACTS[name].late]) ids.set(word, await ownHit(world, name, word))
    }
    ids.set(A_AFTER_FORK, await ownHit(world, 'a', A_AFTER_FORK))

    for (const who of names) {
      // the shared wording hits every session's fact; only the caller's may come back
      const common = hitIds(await search(world, who, 'vault passphrase'))
      expect(common.length).toBeGreaterThan(0)
      expect(common.map(tagOf).every(tag => tag === world.tags[who]), `${who}: ${common.join(', ')}`).toBe(true)
      for (const other of names.filter(name => name !== who)) {
        for (const word of [FACTS[other].early, FACTS[other].late]) {
          const found = await search(world, who, word)
          expect(hitIds(found), `${who} searching ${other}'s "${word}"`).toEqual([])
          expect(found).not.toContain(`**${word}**`) // no snippet either
          // reading another session's row by its id: NOT_FOUND, worded as for an id that never was
          await notFoundAsIfNever(world, who, 'id', ids.get(word)!)
          // a time window around that row, read by the caller, must not bring it back
          const { time } = (await world.harness.ctx.shadowCapture.store.message(ids.get(word)!))!
          const window = await read(world, who, { since: new Date(time - 1).toISOString(), until: new Date(time + 1).toISOString() })
          expect(window, `${who} reading the moment of ${other}'s "${word}"`).not.toMatch(/^Error/) // a real read, not a refusal
          expect(window).not.toContain(word)
        }
        // and its checkpoints: not readable, not usable as a search filter, no existence leak
        const checkpoint = world.checkpoints[other][0]!
        await notFoundAsIfNever(world, who, 'checkpoint', checkpoint)
        const viaFilter = await callTool(world.harness, world.agents[who], SEARCH_TOOL, { query: 'passphrase', checkpoint })
        expect(viaFilter).toMatch(/NOT_FOUND/)
        expect(viaFilter).not.toContain(FACTS[other].early)
      }
    }

    // the fork: its parent's rows below the fork point, its own rows, nothing of A after the fork
    const inherited = hitIds(await search(world, 'fork', FACTS.a.early))
    expect(inherited).toContain(ids.get(FACTS.a.early))
    expect(await read(world, 'fork', { id: ids.get(FACTS.a.early), before: 0, after: 0 })).toContain(FACTS.a.early)
    expect(hitIds(await search(world, 'fork', FORK_OWN)).map(tagOf)).toContain(world.tags.fork)
    expect(hitIds(await search(world, 'fork', A_AFTER_FORK))).toEqual([])
    await notFoundAsIfNever(world, 'fork', 'id', ids.get(A_AFTER_FORK)!)
    for (const other of ['b', 'c'] as const) expect(hitIds(await search(world, 'fork', FACTS[other].early))).toEqual([])
    // and the parent never sees its fork
    expect(hitIds(await search(world, 'a', FORK_OWN))).toEqual([])

    // the store the plugin created in the dsh home is private to its user
    const store = join(world.harness.home, 'shadow-context', 'shadow.db')
    expect(statSync(store).mode & 0o777).toBe(0o600)
    expect(statSync(join(world.harness.home, 'shadow-context')).mode & 0o777).toBe(0o700)
    expect(world.harness.problems()).toEqual([])
    await world.dispose()
  })

  it('with scope "workspace" widens to sessions of the same working directory only', async () => {
    const world = await buildWorld('workspace')
    const sameWorkspace = hitIds(await search(world, 'a', FACTS.c.early))
    expect(sameWorkspace.length).toBeGreaterThan(0)
    expect(sameWorkspace.map(tagOf)).toContain(world.tags.c)
    expect(await read(world, 'a', { id: sameWorkspace.find(id => tagOf(id) === world.tags.c), before: 0, after: 0 })).toContain(FACTS.c.early)
    expect(hitIds(await search(world, 'c', FACTS.a.late)).map(tagOf)).toContain(world.tags.a)
    // the other workspace stays out, both ways
    for (const [who, other] of [['a', 'b'], ['c', 'b'], ['b', 'a'], ['b', 'c']] as const) {
      for (const word of [FACTS[other].early, FACTS[other].late]) expect(hitIds(await search(world, who, word)), `${who} searching ${other}'s "${word}"`).toEqual([])
    }
    const bRow = await ownHit(world, 'b', FACTS.b.early)
    await notFoundAsIfNever(world, 'a', 'id', bRow)
    const common = hitIds(await search(world, 'b', 'vault passphrase'))
    expect(common.length).toBeGreaterThan(0)
    expect(common.map(tagOf).every(tag => tag === world.tags.b)).toBe(true)
    expect(world.harness.problems()).toEqual([])
    await world.dispose()
  })

  it('with scope "workspace" reads a sibling session\'s checkpoint as that session\'s own originals', async () => {
    const world = await buildWorld('workspace')
    // C's first checkpoint folds C's early plant; A has a row at every one of its seqs too
    const store = world.harness.ctx.shadowCapture.store
    const checkpoint = (await store.checkpoint(world.checkpoints.c[0]!))!
    const covered = await store.read({ sessionId: 'iso-c' }, { elidedBy: checkpoint.checkpointId, limit: 1000 })
    expect(covered.map(row => row.text).join('\n')).toContain(FACTS.c.early)
    const text = await read(world, 'a', { checkpoint: checkpoint.checkpointId, budget: 8000 })
    expect(text).toContain(FACTS.c.early)
    expect(text).not.toContain(FACTS.a.early) // A's own rows at the same seqs are not C's checkpoint
    const shown = [...text.matchAll(/(\w+)\.\d+ ·/g)].map(match => match[1]!)
    expect(shown.length).toBeGreaterThan(0)
    expect(new Set(shown)).toEqual(new Set([world.tags.c]))
    await world.dispose()
  })
})
