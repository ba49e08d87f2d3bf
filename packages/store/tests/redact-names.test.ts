/**
 * Env-style secret assignments (redact-names.ts): a name ending in a secret word in any of its
 * spellings, its value redacted and its name kept; code that only mentions a secret stays whole.
 * Both backends: a store redacted by version 3 gets one pass for them at its next writable open.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BUILTINS, MIN_BUILTIN_CHARS, Redactor } from '../src/redact.ts'
import { SECRET_NAME_HINT, SECRET_NAME_SOURCE } from '../src/redact-names.ts'
import { redactEventJson, ShadowStore } from '../src/index.ts'
import { message } from './helpers.ts'
import { asRedactedBy, metaOf } from './meta.ts'
import { TARGETS } from './targets.ts'

const redactor = new Redactor({})

/** Input, and what stays of it (`*` where the value went). */
const SECRETS: ReadonlyArray<readonly [string, string]> = [
  ['DB_PASSWORD=hunter2xyz', 'DB_PASSWORD=*'],
  ['JWT_SECRET=abc123def456ghi', 'JWT_SECRET=*'],
  ['export AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"', 'export AWS_SECRET_ACCESS_KEY="*"'],
  ['STRIPE_API_KEY: sk_abcdef123456', 'STRIPE_API_KEY: *'],
  ['docker run -e POSTGRES_PASSWORD=s3cr3tpw -e PGPASSWORD=another1 img', 'docker run -e POSTGRES_PASSWORD=* -e PGPASSWORD=* img'],
  ['  db-password: "correct horse battery"', '  db-password: "*"'],
  ['password: "correct horse battery staple"', 'password: "*"'],
  ['const dbPassword = "hunter2xyz";', 'const dbPassword = "*";'],
  ["this.clientSecret = 'a8f5f167f44f4964e6c998dee827110c'", "this.clientSecret = '*'"],
  ['MYSQL_PWD=rootpw123', 'MYSQL_PWD=*'],
  ['GITHUB_TOKEN=abcdef123456', 'GITHUB_TOKEN=*'],
  ['slack_bot_token: xyz-123456-abc', 'slack_bot_token: *'],
  ['x-api-key: abcd1234efgh', 'x-api-key: *'],
  ['X-Api-Key: abcd1234efgh', 'X-Api-Key: *'],
  ["'password' => 'hunter2xyz',", "'password' => '*',"],
  ['password := "hunter2xyz"', 'password := "*"'],
  ['BASIC_AUTH=user:pass1234', 'BASIC_AUTH=*'],
  ['proxyAuth: "user:pass1234"', 'proxyAuth: "*"'],
  ['SECRET_KEY_BASE=0123456789abcdef', 'SECRET_KEY_BASE=*'],
  ['APP_KEY=base64:Zm9vYmFyYmF6cXV4', 'APP_KEY=*'],
  ['encryptionKey=0f1e2d3c4b5a6978', 'encryptionKey=*'],
  ['privateKey: "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"', 'privateKey: "*"'],
  ['password: changeme', 'password: *'],
  ['password: letMeIn', 'password: *'],
  ['DISCORD_TOKEN=MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs', 'DISCORD_TOKEN=*'],
  ['token = Zm9vYmFy1.YmF6cXV4.cXV1eA(', 'token = *'],
  ['PASSWORD=12345678', 'PASSWORD=*'],
  ['+ DB_PASSWORD=hunter2xyz ./migrate', '+ DB_PASSWORD=* ./migrate'],
  ['{"DB_PASSWORD":"hunter2xyz"}', '{"DB_PASSWORD":"*"}'],
  ['Driver={ODBC};Server=db;Uid=sa;Pwd=Hunter2secret;', 'Driver={ODBC};Server=db;Uid=sa;Pwd=*;'],
  ['PWD: hunter2xyz', 'PWD: *'],
  [String.raw`{\"jwtSecret\": \"hunter2xyz\"}`, String.raw`{\"jwtSecret\": \"*\"}`],
]

/** Code and configuration that name a secret without holding one: kept byte for byte. */
const NOT_SECRETS: readonly string[] = [
  'password = getPassword()',
  'const token = await auth.getToken(user)',
  'token: string',
  'password?: string | null',
  'secretKey: Optional[str] = None',
  'apiKey: process.env.API_KEY',
  'secret = settings.SECRET_KEY',
  'password = config.db2.password',
  'token=os.environ["GITHUB_TOKEN"]',
  'password=password',
  'connect(user=user, password=db_password)',
  'token = new_token',
  'accessToken: AccessToken',
  'password: userInput',
  'password: correctHorse',
  'DB_PASSWORD="${DB_PASSWORD}"',
  'API_KEY=$STRIPE_API_KEY',
  'password: "{{ .Values.dbPassword }}"',
  'TOKEN_TTL=3600',
  'PASSWORD_MIN_LENGTH=12',
  'DB_PASSWORD_FILE=/run/secrets/db',
  'passwordHash: string',
  'max_tokens: 4096',
  'maxTokens: 4096',
  'tokenizer: cl100k_base',
  'PWD=/srv/build/checkout',
  'OLDPWD=/home/me/project',
  'pwd: ~/src/app',
  'PWD=C:\\Users\\me',
  'auth: bearer123',
  'secret: inherit',
  'password: required',
  'token: undefined',
  'TOKEN=abc',
]

describe('secret assignments', () => {
  it.each(SECRETS)('redacts the value and keeps the name: %s', (input, kept) => {
    const out = redactor.text(input)
    expect(out).toBe(kept.replaceAll('*', '[REDACTED:secret]'))
    expect(redactor.text(out)).toBe(out)
  })

  it.each(NOT_SECRETS)('keeps code and settings that only name a secret: %s', input => {
    expect(redactor.text(input)).toBe(input)
  })

  it('redacts the credentials of an Authorization header, in text and as a JSON key', () => {
    const cases = [
      ["curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA==' https://api", "curl -H 'Authorization: Basic [REDACTED:authorization]' https://api"],
      ['Authorization: token abcdef1234567', 'Authorization: token [REDACTED:authorization]'],
      [String.raw`{\"Authorization\": \"Basic dXNlcjpwYXNzd29yZA==\"}`, String.raw`{\"Authorization\": \"Basic [REDACTED:authorization]\"}`],
      ['Authorization: Bearer abcdefghijklmnop1234', 'Authorization: Bearer [REDACTED:bearer]'],
      ['the Authorization header is required', 'the Authorization header is required'],
    ]
    for (const [input, kept] of cases) expect(redactor.text(input!)).toBe(kept)
    const headers = JSON.parse(redactor.json(JSON.stringify({ headers: { Authorization: 'Basic dXNlcjpwYXNzd29yZA==', 'proxy-authorization': 'Basic Zm9vOmJhcg==', Accept: 'application/json' } }))) as { headers: Record<string, string> }
    expect(headers.headers).toEqual({ Authorization: '[REDACTED:secret]', 'proxy-authorization': '[REDACTED:secret]', Accept: 'application/json' })
  })

  it('redacts a .env dump line by line, keeping its other settings', () => {
    const dump = ['NODE_ENV=production', 'PORT=8080', 'DB_HOST=db.internal', 'DB_PASSWORD=Tr0ub4dor&3', 'TOKEN_TTL=3600', 'JWT_SECRET="9f86d081884c7d659a2feaa0c55ad015"', 'PWD=/srv/app'].join('\n')
    expect(redactor.text(dump)).toBe(['NODE_ENV=production', 'PORT=8080', 'DB_HOST=db.internal', 'DB_PASSWORD=[REDACTED:secret]', 'TOKEN_TTL=3600', 'JWT_SECRET="[REDACTED:secret]"', 'PWD=/srv/app'].join('\n'))
  })

  it('takes string values under secret-named JSON keys in every spelling, references excepted', () => {
    const out = JSON.parse(redactor.json(JSON.stringify({ DB_PASSWORD: 'hunter2xyz', jwtSecret: 'abc', 'x-api-key': 'k1', PGPASSWORD: 'p', ref: { password: '${DB_PASSWORD}' }, max_tokens: 'x', TOKEN_TTL: '3600', env: { PWD: '/srv/app', OLDPWD: '/srv' }, odbc: { Pwd: 'Hunter2' } }))) as Record<string, unknown>
    expect(out).toEqual({ DB_PASSWORD: '[REDACTED:secret]', jwtSecret: '[REDACTED:secret]', 'x-api-key': '[REDACTED:secret]', PGPASSWORD: '[REDACTED:secret]', ref: { password: '${DB_PASSWORD}' }, max_tokens: 'x', TOKEN_TTL: '3600', env: { PWD: '/srv/app', OLDPWD: '/srv' }, odbc: { Pwd: '[REDACTED:secret]' } })
  })

  it('is idempotent over generated assignments, names, separators and values', () => {
    const name = fc.constantFrom('DB_PASSWORD', 'password', 'Pwd', 'Authorization', 'Authorization: Basic', 'jwtSecret', 'x-api-key', 'PGPASSWORD', 'MYSQL_PWD', 'PWD', 'TOKEN_TTL', 'basicAuth', 'auth', 'max_tokens', 'SECRET_KEY_BASE', 'Api-Key')
    const sep = fc.constantFrom('=', ': ', ' = ', ':=', ' => ', '\\":\\"', '":"', '=\'', ':\n  ')
    const value = fc.oneof(fc.constantFrom('getPassword()', 'string', 'process.env.X', '${X}', 'hunter2xyz', 'correct horse', '[REDACTED:secret]', 'userInput', '3600', 'a.b(', '"', "'", '\\'), fc.string({ maxLength: 14 }))
    const text = fc.array(fc.oneof(fc.tuple(name, sep, value).map(parts => parts.join('')), fc.constantFrom(' ', '\n', ',', '"', 'sk-')), { maxLength: 8 }).map(parts => parts.join(''))
    fc.assert(fc.property(text, input => {
      const once = redactor.text(input)
      expect(redactor.text(once)).toBe(once)
      const json = JSON.stringify({ type: 'user/message', seq: 1, time: 1, data: { content: [{ type: 'text', text: input }, { type: 'text', text: once }] } })
      const event = redactEventJson(json, redactor)
      expect(redactEventJson(event, redactor)).toBe(event)
    }), { numRuns: 3_000 })
  })

  it('hints a text for every spelling of every secret name', () => {
    const names = new RegExp(SECRET_NAME_SOURCE, 'g')
    const sample = 'db_password DB_PASSWORD dbPassword DbPassword db-password PGPASSWORD x_pwd X_PWD xPwd proxyAuth BASIC_AUTH api_key API-KEY apiKey ApiKey Api-Key secretKeyBase SECRET_KEY_BASE credentials Passphrase accessKey'
    const found = sample.match(names) ?? []
    expect(found.length).toBe(sample.split(' ').length)
    for (const name of found) expect(SECRET_NAME_HINT.test(name), name).toBe(true)
  })
})

describe('detector hints', () => {
  it('are in every match of their detector, and no match is shorter than the shortest scanned text', () => {
    const piece = fc.constantFrom('Authorization: ', 'Basic ', 'token ', '\\"', 'sk-', 'ghp_', 'github_pat_', 'AKIA', 'ASIA', 'xoxb-', 'AIza', 'sk_live_', 'rk_test_', 'eyJ', '.', 'Bearer ', 'bearer\t', 'password', 'DB_PASSWORD', 'x_pwd', 'aAuth', 'Token', '=', ':', ' ', '"', '\\"', 'a://', 'b:', '@', 'ccc', 'A', '0', 'Z9', '_-', 'abcdefgh')
    const text = fc.array(piece, { maxLength: 24 }).map(parts => parts.join(''))
    fc.assert(fc.property(text, fc.nat(40), (input, repeat) => {
      const padded = input + 'a0'.repeat(repeat)
      for (const { kind, pattern, hint } of BUILTINS) {
        const probe = new RegExp(pattern.source, pattern.flags)
        for (const match of padded.matchAll(probe)) {
          expect(match[0].length, kind).toBeGreaterThanOrEqual(MIN_BUILTIN_CHARS)
          expect(hint?.test(match[0]), `${kind}: ${match[0]}`).toBe(true)
        }
      }
    }), { numRuns: 5_000 })
  })
})

describe.each(TARGETS)('a store redacted before env-style names on $name', target => {
  beforeAll(() => target.setup())
  afterAll(() => target.teardown())

  it('gets one redaction pass at its next writable open', async () => {
    const location = target.location()
    const plain = await ShadowStore.open(location, { redact: false })
    const dump = 'DB_PASSWORD=hunter2envX\nTOKEN_TTL=3600'
    await plain.append([message('env', 0, dump, { eventJson: JSON.stringify({ type: 'user/message', seq: 0, data: { content: [{ type: 'text', text: dump }] } }) })])
    await plain.close()
    // as version 3 left it: its policy and hashes current, but blind to DB_PASSWORD=
    await asRedactedBy(target, location, 3)
    const store = await ShadowStore.open(location, { redact: {} })
    const [stored] = await store.read({ sessionId: 'env' })
    expect(stored!.text).toBe('DB_PASSWORD=[REDACTED:secret]\nTOKEN_TTL=3600')
    expect(stored!.eventJson).not.toContain('hunter2envX')
    expect(await store.integrityCheck()).toEqual([])
    await store.close()
    expect(await metaOf(target, location, 'redaction_version')).toBe('4')
  })
})
