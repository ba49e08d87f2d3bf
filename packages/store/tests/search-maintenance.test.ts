/**
 * Searches racing every maintenance pass of another process on the same store: reindex, vacuum,
 * retention (gc), a redaction pass (a redacting open), forget, and writes. No search may crash or
 * fail untyped, and none that starts after a pass finished may show what the pass removed: an
 * expired original, a redacted secret, a forgotten session's row.
 */
import { spawn } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShadowStore, ShadowStoreError, sessionTag, type SearchOptions } from '../src/index.ts'
import { message } from './helpers.ts'
import { TARGETS } from './targets.ts'

/** The maintenance process: each pass's name is printed once it is done. */
const PASSES = `
  const { ShadowStore } = await import(process.env.STORE_INDEX)
  const location = process.env.STORE_LOCATION
  const row = (sessionId, seq, text) => ({ sessionId, seq, eventType: 'user/message', role: 'user', sourceKind: 'user', turn: 1, step: 1, toolName: null, callId: null, time: Date.now(), eventJson: JSON.stringify({ text }), text, tokens: 5 })
  const store = await ShadowStore.open(location)
  await store.reindex()
  await store.vacuum()
  await store.gc({ maxAgeMs: 1 })
  console.log('expired')
  await store.close()
  const redacting = await ShadowStore.open(location, { redact: { patterns: ['zq-SECRET-[0-9]+'] } })
  console.log('redacted')
  await redacting.forget('m3')
  console.log('forgotten')
  await redacting.vacuum()
  await redacting.append(Array.from({ length: 50 }, (_, i) => row('m1', 1000 + i, 'needle late ' + i + ' zq-SECRET-' + i + ' pool')))
  await redacting.reindex()
  await redacting.close()
  console.log('done')
`

describe.each(TARGETS)('searches racing maintenance in another process on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it('never fail untyped, nor show what a finished pass removed', async () => {
    const location = target.location()
    const store = await ShadowStore.open(location)
    for (const sessionId of ['m1', 'm2', 'm3']) await store.registerSession({ sessionId, workspace: 'w' })
    for (const sessionId of ['m1', 'm2', 'm3']) {
      await store.append(Array.from({ length: 400 }, (_, index) => message(sessionId, index + 1, `needle ${index} pool retry ${sessionId} ${index % 3 === 0 ? `zq-SECRET-${index}` : 'plain'} ${sessionId === 'm2' && index < 200 ? `zq-EXPIRED-${index}` : ''}`)))
    }
    // m2's first 200 rows are a checkpoint's originals: retention drops them
    const checkpoint = await store.recordCheckpoint({ checkpointId: `${sessionTag('m2')}.c1`, sessionId: 'm2', engine: 'shadow-context', status: 'committed', shadowedSeqs: Array.from({ length: 200 }, (_, index) => index + 1), createdAt: 1 })
    await store.ingest([{ op: 'checkpoint', checkpoint, elide: true }])
    const done = new Set<string>()
    let output = ''
    const child = spawn(process.execPath, ['--conditions=source', '--disable-warning=ExperimentalWarning', '--input-type=module', '-e', PASSES], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, STORE_INDEX: new URL('../src/index.ts', import.meta.url).href, STORE_LOCATION: location },
    })
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      for (const pass of ['expired', 'redacted', 'forgotten', 'done']) if (output.includes(pass)) done.add(pass)
    })
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const exited = new Promise(resolve => child.on('exit', resolve))
    const problems: string[] = []
    let searches = 0
    const scopes: SearchOptions[] = [{ sessionId: 'm1', allSessions: true }, { sessionId: 'm2', workspace: 'w' }, { sessionId: 'm2' }]
    const searching = async (): Promise<void> => {
      while (!done.has('done')) {
        // a SQLite store answers at once: let the child's output in
        await new Promise(resolve => setImmediate(resolve))
        const before = new Set(done)
        const options = scopes[searches % scopes.length]!
        const query = ['needle zq SECRET', 'pool retry m3', 'needle zq EXPIRED'][searches % 3]!
        searches += 1
        try {
          const result = await store.search(query, options)
          for (const hit of result.hits) {
            const shown = [hit.message.text, hit.snippet, hit.call?.text ?? '', hit.question?.text ?? ''].join('\n')
            if (before.has('expired') && shown.includes('zq-EXPIRED')) problems.push(`expired original shown: ${hit.message.shadowId}`)
            if (before.has('redacted') && shown.includes('zq-SECRET')) problems.push(`redacted secret shown: ${hit.message.shadowId}`)
            if (before.has('forgotten') && hit.message.sessionId === 'm3') problems.push(`forgotten row shown: ${hit.message.shadowId}`)
          }
        } catch (error) {
          if (!(error instanceof ShadowStoreError)) problems.push(`untyped: ${String(error)}`)
          // a forgotten scope, or a store busy with a pass, is a typed answer
          else if (!['NOT_FOUND', 'UNAVAILABLE'].includes(error.code)) problems.push(`${error.code}: ${error.message}`)
        }
      }
    }
    await Promise.all([searching(), searching(), exited])
    await store.close()
    expect(output).toContain('done')
    expect(problems).toEqual([])
    expect(searches).toBeGreaterThan(10)
  }, 120_000)
})
