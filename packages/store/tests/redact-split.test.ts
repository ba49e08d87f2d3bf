/**
 * A secret whose name and value sit in two content blocks: the row's text joins the blocks with a
 * newline and is redacted whole, so the stored event JSON must not keep the value either (read
 * returns it). Both backends; a store written before this redaction is redacted again on open.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Redactor } from '../src/redact.ts'
import { redactEventJson, rowFromCaptured, ShadowStore } from '../src/index.ts'
import { message } from './helpers.ts'
import { asRedactedBy, metaOf, setMeta } from './meta.ts'
import { TARGETS } from './targets.ts'

const SECRET = 'Zebra-Horse-Battery-77'

/** A user message of two text blocks, the secret's name in the first and its value in the second. */
function split(sessionId: string, seq: number, value = SECRET) {
  const blocks = ['the db password:', value]
  const text = blocks.join('\n')
  return message(sessionId, seq, text, { eventJson: JSON.stringify({ type: 'user/message', seq, time: 1, data: { content: blocks.map(block => ({ type: 'text', text: block })) } }) })
}

describe('redactEventJson', () => {
  const redactor = new Redactor({})

  it('takes a value out of its own block when the name is in the block before', () => {
    const json = split('s', 0).eventJson
    expect(redactor.json(json)).toContain(SECRET) // string by string, the value alone is no secret
    const redacted = redactEventJson(json, redactor)
    expect(redacted).not.toContain(SECRET)
    expect(JSON.parse(redacted).data.content.map((block: { text: string }) => block.text)).toEqual(['the db password:', '[REDACTED:secret]'])
    // deterministic and idempotent: a verifier redacting the log event again gets the same bytes
    expect(redactEventJson(json, redactor)).toBe(redacted)
    expect(redactEventJson(redacted, redactor)).toBe(redacted)
  })

  it('takes every line of a private key split across blocks out', () => {
    const body = 'MIIEowIBAAKCAQEAx7Qm2bq9Zl4fG8vTnK1sP0dR3yW6uH5jA2cE9oL1iN4tB7rX'
    const blocks = ['-----BEGIN RSA PRIVATE KEY-----', `${body}\n-----END RSA PRIVATE KEY-----`]
    const json = JSON.stringify({ type: 'tool/result', seq: 3, data: { message: { content: [{ type: 'tool-result', toolCallId: 'c1', content: blocks.map(text => ({ type: 'text', text })) }] } } })
    expect(redactor.json(json)).toContain(body)
    expect(redactEventJson(json, redactor)).not.toContain(body)
  })

  it('takes overlapping secrets out whole, and carries thousands of them in linear time', () => {
    // two secrets whose lines overlap in one string: no part of either stays
    const overlap = JSON.stringify({ type: 'user/message', seq: 0, data: { content: [{ type: 'text', text: 'password:' }, { type: 'text', text: 'abcdefgh12' }, { type: 'text', text: 'token:' }, { type: 'text', text: 'gh12ijklmn' }, { type: 'text', text: 'seen abcdefgh12ijklmn here' }] } })
    const last = JSON.parse(redactEventJson(overlap, redactor)).data.content[4].text as string
    expect(last).toBe('seen [REDACTED:secret] here')
    // 40,000 blocks, 20,000 carried secrets: looking for each in every string took ~11 s (quadratic)
    const content = Array.from({ length: 40_000 }, (_, index) => ({ type: 'text', text: index % 2 === 1 ? `Val${index}-${(index * 7919).toString(36)}xyzq` : 'password:' }))
    const many = JSON.stringify({ type: 'tool/result', seq: 3, time: 1, data: { message: { content: [{ type: 'tool-result', toolCallId: 'c1', content }] } } })
    const started = performance.now()
    const redacted = redactEventJson(many, redactor)
    expect(performance.now() - started).toBeLessThan(3_000) // generous: linear is ~0.3 s here
    expect(redacted).not.toMatch(/Val\d+-/)
  })

  it('carries thousands of secrets that begin alike past a long run of those characters in linear time', () => {
    // 4,000 values all beginning 'AAAAAA', then 200,000 A's: each position of the run had each of
    // the 4,000 looked at (41 s; 1,000 values and 100,000 A's, a 170 KB message, 4.4 s)
    const content = Array.from({ length: 8_000 }, (_, index) => ({ type: 'text', text: index % 2 === 0 ? 'password:' : `AAAAAA${index}` }))
    content.push({ type: 'text', text: `${'A'.repeat(200_000)}${'AAAAAA'}7` }, { type: 'text', text: 'keep AAAAAA1 and AAAAAA11 and AAAAAA111x' })
    const json = JSON.stringify({ type: 'user/message', seq: 1, time: 1, data: { content } })
    const started = performance.now()
    const out = JSON.parse(redactEventJson(json, redactor)).data.content as Array<{ text: string }>
    expect(performance.now() - started).toBeLessThan(5_000) // a hang guard: linear is ~0.1 s
    expect(out.filter((_, index) => index % 2 === 1 && index < 8_000).every(block => block.text === '[REDACTED:secret]')).toBe(true)
    // the run is one covered stretch where a value ends it ('AAAAAA7' after A's is one of them)
    expect(out[8_000]!.text).toBe(`${'A'.repeat(200_000)}[REDACTED:secret]`)
    // longest wins where values overlap: AAAAAA111 then 'x' (AAAAAA1, AAAAAA11 are values too)
    expect(out[8_001]!.text).toBe('keep [REDACTED:secret] and [REDACTED:secret] and [REDACTED:secret]x')
  })

  it('scans only the strings of an event that can hold a secret: 400,000 one-character blocks', () => {
    // every detector ran on each of the event's 1.2 million strings (keys too): 2.2-3.1 s
    const content = Array.from({ length: 400_000 }, (_, index) => ({ type: 'text', text: String(index % 10) }))
    content[1_000] = { type: 'text', text: 'DB_PASSWORD=hunter2xyz' }
    content[2_000] = { type: 'text', text: `token ghp_${'a'.repeat(36)}` }
    const json = JSON.stringify({ type: 'user/message', seq: 1, time: 1, data: { content } })
    const fresh = new Redactor({})
    const out = JSON.parse(redactEventJson(json, fresh)).data.content as Array<{ type: string; text: string }>
    expect(out).toHaveLength(400_000)
    expect(out[1_000]!.text).toBe('DB_PASSWORD=[REDACTED:secret]')
    expect(out[2_000]!.text).toBe('token [REDACTED:github-token]')
    expect(out.filter((block, index) => index !== 1_000 && index !== 2_000 && (block.type !== 'text' || block.text !== String(index % 10)))).toEqual([])
    // the text the event renders to (one scan per detector with a hint in it) and the two blocks
    expect(fresh.scans).toBeLessThan(40)
  })

  it('redacts an event nested as deep as dsh can write one (its walk is no recursion)', () => {
    // 1,900 deep overflowed the call stack (JSON.stringify, which dsh writes its log with, goes
    // to ~4,000): the append failed, and was retried with its session's later rows behind it
    const depth = 3_500
    const deep = `${'['.repeat(depth)}{"password":"hunter2deep","DB_PASSWORD=hunter2env":1}${']'.repeat(depth)}`
    const json = `{"type":"user/message","seq":1,"time":1,"data":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b","deep":${deep}}]}}`
    const out = redactEventJson(json, redactor)
    expect(out).not.toContain('hunter2')
    expect(out).toContain(`${'['.repeat(depth)}{"password":"[REDACTED:secret]","DB_PASSWORD=[REDACTED:secret]":1}`)
    expect(redactEventJson(out, redactor)).toBe(out)
  })

  it('redacts what it made to itself (found by a property test: a marker that begins a word, a value that is a name)', () => {
    const cases = [
      ['Bearerghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-----BEGIN RSA PRIVATE KEY-----', 'Bearer'],
      ['password:', 'password:password:', ''],
      // a name, then a block its redaction turns into the name's value (`password:[REDACTED:secret]`)
      ['password:', 'password::A0.A(', ''],
    ]
    for (const blocks of cases) {
      const json = JSON.stringify({ type: 'user/message', seq: 1, time: 1, data: { content: blocks.map(text => ({ type: 'text', text })) } })
      const once = redactEventJson(json, redactor)
      expect(redactEventJson(once, redactor), JSON.stringify(blocks)).toBe(once)
    }
  })

  it('over generated events of secret fragments in blocks: valid JSON, redacts to itself, keeps no line the text redaction took out', () => {
    const fragment = fc.oneof(
      fc.constantFrom('password:', 'token =', 'Bearer', 'api_key:', 'sk-', '-----BEGIN RSA PRIVATE KEY-----', '-----END RSA PRIVATE KEY-----', 'MIIEowIBAAKCAQEAx7Qm2bq9Zl4f', 'Zebra-Horse-77', ' ', '\n', 'secret', '"', '[REDACTED:secret]', '😀', `ghp_${'a'.repeat(36)}`),
      fc.string({ maxLength: 12 }),
    )
    const blocks = fc.array(fc.array(fragment, { maxLength: 6 }).map(parts => ({ type: 'text', text: parts.join('') })), { minLength: 1, maxLength: 6 })
    const marker = /\[REDACTED:[a-z-]+\]/g
    fc.assert(fc.property(blocks, fc.boolean(), (content, tool) => {
      const event = tool
        ? { type: 'tool/result' as const, seq: 1, time: 1, data: { message: { content: [{ type: 'tool-result', toolCallId: 'c', content }] } } }
        : { type: 'user/message' as const, seq: 1, time: 1, data: { content } }
      const json = JSON.stringify(event)
      const out = redactEventJson(json, redactor)
      JSON.parse(out)
      expect(redactEventJson(out, redactor)).toBe(out)
      const text = rowFromCaptured({ sessionId: 's', seq: 1, type: event.type, time: 1, turn: null, step: null, toolName: null, eventJson: json }).text
      const kept = redactor.text(text).replace(marker, '')
      // the event's strings as decoded, not its JSON: an escape's letter ("\\n") before kept text
      // ("Zebra-Horse-77") spelled a removed line ("nZebra-Horse-77") that no string holds
      const strings: string[] = []
      JSON.parse(out, (_key, value: unknown) => {
        if (typeof value === 'string') strings.push(value.replace(marker, ''))
        return value
      })
      const left = strings.join('\u0000')
      for (const { value } of redactor.removed(text)) {
        for (const line of value.split(/\r?\n/).map(piece => piece.trim())) {
          if (line.length >= 6 && !line.startsWith('[REDACTED:') && !kept.includes(line)) expect(left).not.toContain(line)
        }
      }
    }), { numRuns: 2_000 })
  })

  it('leaves a document that is no dsh event, and ordinary blocks, as string-by-string redaction does', () => {
    const other = JSON.stringify({ note: 'the db password:', next: SECRET })
    expect(redactEventJson(other, redactor)).toBe(redactor.json(other))
    const plain = JSON.stringify({ type: 'user/message', seq: 0, data: { content: [{ type: 'text', text: 'hello' }, { type: 'text', text: 'world, password: hunter22x' }] } })
    expect(redactEventJson(plain, redactor)).toBe(redactor.json(plain))
    // a short line of a secret is not carried into other strings (it would hit ordinary words)
    const short = JSON.stringify({ type: 'user/message', seq: 0, data: { content: [{ type: 'text', text: 'token =' }, { type: 'text', text: 'abcdefg' }, { type: 'text', text: 'the abcdef of it' }] } })
    expect(JSON.parse(redactEventJson(short, redactor)).data.content[2].text).toBe('the abcdef of it')
  })
})

describe.each(TARGETS)('a secret split across content blocks on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it('is kept in neither the text nor the event JSON, and the row verifies against its log event', async () => {
    const store = await ShadowStore.open(target.location(), { redact: {} })
    const row = split('s', 0)
    await store.append([row])
    const [stored] = await store.read({ sessionId: 's' })
    expect(stored!.text).not.toContain(SECRET)
    expect(stored!.eventJson).not.toContain(SECRET)
    // what capture's confirm sends: the hash of the log event as this store redacts it
    expect((await store.confirm('s', [{ seq: 0, hash: store.hashOf(row.eventJson) }])).mismatched).toEqual([])
    expect(await store.integrityCheck()).toEqual([])
    await store.close()
  })

  it('a redacting store written before this redaction is redacted again when it opens', async () => {
    const location = target.location()
    const plain = await ShadowStore.open(location, { redact: false })
    await plain.append([split('old', 0)])
    await plain.close()
    // as a redacting store of the previous version left it: its policy saved, no redaction version
    await setMeta(target, location, 'redact', '{}')
    const store = await ShadowStore.open(location, { redact: {} })
    const [stored] = await store.read({ sessionId: 'old' })
    expect(stored!.text).not.toContain(SECRET)
    expect(stored!.eventJson).not.toContain(SECRET)
    expect(await store.integrityCheck()).toEqual([])
    await store.close()
    // once redacted again, a later open does not pass over the rows again
    expect(await metaOf(target, location, 'redaction_version')).toBe('4')
  })

  it('a store redacted by version 2 is redacted again for secrets in JSON inside JSON strings', async () => {
    const location = target.location()
    const plain = await ShadowStore.open(location, { redact: false })
    const args = JSON.stringify({ path: 'config.json', content: JSON.stringify({ password: 'hunter2nested' }) })
    const text = `[tool call write] ${args}`
    await plain.append([message('v2', 0, text, { eventType: 'assistant/message', role: 'assistant', eventJson: JSON.stringify({ type: 'assistant/message', seq: 0, data: { message: { content: [{ type: 'tool-call', id: 'c1', name: 'write', arguments: args }] } } }) })])
    await plain.close()
    // as version 2 left it: its redaction did not see the escaped quotes
    await asRedactedBy(target, location, 2)
    const store = await ShadowStore.open(location, { redact: {} })
    const [stored] = await store.read({ sessionId: 'v2' })
    expect(stored!.text).not.toContain('hunter2nested')
    expect(stored!.eventJson).not.toContain('hunter2nested')
    expect(await store.integrityCheck()).toEqual([])
    await store.close()
  })

  it('a pass cut off part-way starts over when the policy changes before it finishes', async () => {
    // a pass killed after its first batch leaves its progress in meta; opening with a stricter
    // policy then resumed there, and the rows before it never saw the new pattern
    const location = target.location()
    const plain = await ShadowStore.open(location, { redact: false })
    await plain.append(Array.from({ length: 1_200 }, (_, seq) => message('cut', seq, `row ${seq} ships acme-${String(10_000_000 + seq)}`)))
    await plain.close()
    await expect(ShadowStore.open(location, { redact: {}, onProgress: () => { throw new Error('killed mid-pass') } })).rejects.toThrow('killed mid-pass')
    expect(Number(await metaOf(target, location, 'redact_pass'))).toBeGreaterThan(0)
    const store = await ShadowStore.open(location, { redact: { patterns: ['acme-[0-9]{8}'] } })
    const rows = await store.read({ sessionId: 'cut' }, { limit: 2_000 })
    expect(rows).toHaveLength(1_200)
    expect(rows.filter(row => row.text.includes('acme-1') || row.eventJson.includes('acme-1')).map(row => row.seq)).toEqual([])
    expect(await store.integrityCheck()).toEqual([])
    await store.close()
  })
})
