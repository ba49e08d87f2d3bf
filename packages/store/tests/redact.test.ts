import { Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { Redactor } from '../src/redact.ts'
import { redactEventJson } from '../src/index.ts'

const MB = 1 << 20

/** Inputs built to make a backtracking pattern rescan the rest of the text from every start. */
const ADVERSARIAL: Record<string, (size: number) => string> = {
  'url scheme run (a.)': size => 'a.'.repeat(size / 2),
  'url scheme run (x-)': size => 'x-'.repeat(size / 2),
  'jwt prefix run (eyJ-)': size => 'eyJ-'.repeat(size / 4),
  'jwt header without payload': size => 'eyJabcdefghij.'.repeat(size / 14),
  'private key header without end': size => '-----BEGIN RSA PRIVATE KEY-----x'.repeat(size / 32),
  'url user without secret': size => `a://${'b'.repeat(size - 4)}`,
  'url secret without @': size => `a://b:${'c:'.repeat((size - 6) / 2)}`,
  'bearer runs': size => 'Bearer '.repeat(size / 7),
  'secret keyword runs': size => 'password '.repeat(size / 9),
  'escaped quotes after keywords': size => 'password\\\\\\"'.repeat(size / 12),
  'env-style names in every spelling': size => 'DB_PASSWORD=x dbPassword: x_pwd=proxyAuth:Api-Key='.repeat(size / 50),
  'authorization headers without credentials': size => 'Authorization: Basic \\"'.repeat(size / 24),
  'bare Pwd runs': size => 'Pwd=Pwd:'.repeat(size / 8),
  'closing brackets after a secret name': size => `DB_PASSWORD=${')'.repeat(size - 13)}a`,
  'a quoted value never closed': size => `password: "${'a b '.repeat(size / 4)}`,
  'member paths after a secret name': size => `token=${'a.'.repeat(size / 2)}(`,
  'camel humps after a secret name': size => `token=${'Abc'.repeat(size / 3)}x`,
  'api key prefix runs': size => 'sk-a '.repeat(size / 5),
  'spaces after keywords': size => `password${' '.repeat(size / 2)}Bearer${' '.repeat(size / 2)}`,
  'seeded mix of pattern fragments': size => {
    const pieces = ['a.', 'eyJ', '-', '.', '://', ':', '@', 'Bearer ', 'password', '=', ' ', 'sk-', '-----BEGIN RSA PRIVATE KEY-----', '-----END RSA PRIVATE KEY-----', 'x', 'AKIA', '"']
    let seed = 12345
    let out = ''
    while (out.length < size) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      out += pieces[seed % pieces.length]
    }
    return out
  },
}

/**
 * Redact in a worker with a deadline: a quadratic pattern takes minutes on 1 MB, and a regular
 * expression cannot be interrupted from its own thread.
 */
function redactWithDeadline(input: string, deadlineMs: number): Promise<{ ok: true; length: number } | { ok: false }> {
  const worker = new Worker(`
    const { parentPort, workerData } = require('node:worker_threads')
    import(workerData.module).then(({ Redactor }) => {
      parentPort.postMessage(new Redactor({}).text(workerData.input).length)
    })
  `, { eval: true, workerData: { input, module: new URL('../src/redact.ts', import.meta.url).href } })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void worker.terminate()
      resolve({ ok: false })
    }, deadlineMs)
    worker.once('message', (length: number) => {
      clearTimeout(timer)
      void worker.terminate()
      resolve({ ok: true, length })
    })
    worker.once('error', error => {
      clearTimeout(timer)
      reject(error)
    })
  })
}

describe('Redactor', () => {
  // A generous guard, not a timing: linear matching does 1 MB in milliseconds; the quadratic
  // patterns this replaces took minutes (78 KB of "a." took 5 s).
  it.each(Object.keys(ADVERSARIAL))('redacts 1 MB of adversarial input in linear time: %s', async name => {
    const input = ADVERSARIAL[name]!(MB)
    const result = await redactWithDeadline(input, 5_000)
    expect(result.ok, `${name}: 1 MB did not redact within 5 s`).toBe(true)
  })

  it('still finds secrets next to adversarial runs', () => {
    const redactor = new Redactor({})
    const jwt = `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.${'s'.repeat(43)}`
    const key = `-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA${'Q'.repeat(64)}\n-----END RSA PRIVATE KEY-----`
    const text = [
      `${'a.'.repeat(500)} postgres://admin:hunter22@db:5432/app`,
      `${'eyJ-'.repeat(500)} ${jwt}`,
      `${'-----BEGIN RSA PRIVATE KEY-----x'.repeat(3)}`,
      key,
      'x-https://u:pa55word@host',
    ].join('\n')
    const out = redactor.text(text)
    expect(out).not.toContain('hunter22')
    expect(out).not.toContain(jwt)
    expect(out).not.toContain('MIIEowIBAAKCAQEA')
    expect(out).not.toContain('pa55word')
    expect(out).toContain('postgres://admin:[REDACTED:url-credentials]@db:5432/app')
    expect(out).toContain('[REDACTED:jwt]')
    expect(out).toContain('[REDACTED:private-key]')
  })

  it('redacts a private key cut off before its END line (truncated tool output)', () => {
    const out = new Redactor({}).text(`key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcn\nNhAAAAAwEAAQAAAYEA\n[output truncated]`)
    expect(out).not.toContain('b3BlbnNzaC1rZXkt')
    expect(out).not.toContain('NhAAAAAwEAAQAAAYEA')
    expect(out).toContain('[output truncated]')
    // a JSON file shown as text: its line breaks are escapes
    const account = String.raw`{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\nggSjAgEAAoIBAQC7Zm9vYmFy\n` + '\n[output truncated]'
    const cut = new Redactor({}).text(account)
    expect(cut).toBe('{"type": "service_account", "private_key": "[REDACTED:private-key][output truncated]')
    expect(new Redactor({}).text(JSON.stringify(account))).not.toContain('ggSjAgEAAoIBAQC7')
  })

  it('redacts a secret in JSON inside a JSON string (a tool call that writes a config file)', () => {
    // the call's arguments are JSON; the file's content in them is JSON again, its quotes escaped
    const file = JSON.stringify({ password: 'hunter2secretX', nested: { api_key: 'abcdef123456' } }, null, 2)
    const args = JSON.stringify({ path: 'config.json', content: file })
    const redactor = new Redactor({})
    for (const text of [args, JSON.stringify(args)]) {
      const out = redactor.text(text)
      expect(out).not.toContain('hunter2secretX')
      expect(out).not.toContain('abcdef123456')
      expect(redactor.text(out)).toBe(out)
    }
    // the value ends at its escaped closing quote: what follows it stays
    expect(redactor.text(String.raw`{\"password\": \"hunter2secretX\", \"user\": \"ann\"}`)).toBe(String.raw`{\"password\": \"[REDACTED:secret]\", \"user\": \"ann\"}`)
  })

  it('is idempotent: redacting redacted text changes nothing', () => {
    const redactor = new Redactor({})
    const once = redactor.text('password: hunter2-secret and sk-0123456789abcdefABCDEF0123 https://u:pa55word@h')
    expect(redactor.text(once)).toBe(once)
  })

  it('redacts secrets used as JSON keys and values under secret-named keys', () => {
    const redactor = new Redactor({})
    const json = JSON.stringify({
      data: {
        'sk-0123456789abcdefABCDEF0123': 'a key as a key',
        arguments: { password: 'hunter2-secret', db_password: 'tr0ub4dor&3', apiKey: 'abc123def456', tokens: 1200, note: 'no secret' },
      },
    })
    const out = redactor.json(json)
    for (const secret of ['sk-0123456789', 'hunter2-secret', 'tr0ub4dor', 'abc123def456']) expect(out).not.toContain(secret)
    const parsed = JSON.parse(out) as { data: Record<string, unknown> & { arguments: Record<string, unknown> } }
    expect(parsed.data['[REDACTED:api-key]']).toBe('a key as a key')
    expect(parsed.data.arguments).toMatchObject({ password: '[REDACTED:secret]', tokens: 1200, note: 'no secret' })
  })

  it('keeps every entry when two redacted keys collide', () => {
    const out = new Redactor({}).json(JSON.stringify({ 'sk-0123456789abcdefABCDEF0123': 1, 'sk-9999999999abcdefABCDEF0123': 2 }))
    expect(Object.values(JSON.parse(out) as Record<string, number>).toSorted()).toEqual([1, 2])
    expect(out).not.toContain('sk-')
  })

  it('keeps thousands of colliding keys apart in linear time, named as before', () => {
    // each key looked for a free name from #2 up: 20,000 keys redacting alike took 35 s (a 940 KB event)
    const keys = Object.fromEntries(Array.from({ length: 20_000 }, (_, index) => [`ghp_${String(index).padStart(36, 'a')}`, index]))
    const redactor = new Redactor({})
    // and keys that are values carried from the event's text ('password:' then one in the next block)
    const values = Array.from({ length: 20_000 }, (_, index) => `val${index}-secretvalue`)
    const event = JSON.stringify({ type: 'user/message', seq: 1, time: 1, data: { content: values.flatMap(value => [{ type: 'text', text: 'password:' }, { type: 'text', text: value }]), keys: Object.fromEntries(values.map((value, index) => [value, index])) } })
    for (const json of [JSON.stringify({ '[REDACTED:github-token]#3': -1, ...keys }), event]) {
      const started = performance.now()
      const out = json.includes('user/message') ? redactEventJson(json, redactor) : redactor.json(json)
      expect(performance.now() - started).toBeLessThan(5_000) // a hang guard: linear is ~0.1 s
      const parsed = JSON.parse(out) as Record<string, unknown>
      const object = (parsed['data'] === undefined ? parsed : (parsed['data'] as Record<string, unknown>)['keys']) as Record<string, number>
      expect(Object.keys(object)).toHaveLength(json.includes('user/message') ? 20_000 : 20_001)
      expect(out).not.toMatch(/ghp_|val\d+-secretvalue/)
    }
    // the names are the ones the first free suffix gives (a taken #3 skipped)
    expect(Object.keys(JSON.parse(redactor.json(JSON.stringify({ '[REDACTED:github-token]#3': 0, ...Object.fromEntries(Object.entries(keys).slice(0, 4)) }))) as object))
      .toEqual(['[REDACTED:github-token]#3', '[REDACTED:github-token]', '[REDACTED:github-token]#2', '[REDACTED:github-token]#4', '[REDACTED:github-token]#5'])
  })
})
