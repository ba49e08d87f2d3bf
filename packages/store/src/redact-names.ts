/**
 * Secret assignments: a name ending in a secret word (`password`, `DB_PASSWORD`, `jwtSecret`,
 * `x-api-key`, `AWS_SECRET_ACCESS_KEY`, `PGPASSWORD`), then `=`, `:`, `:=` or `=>`, then a value.
 * The value is redacted and the name kept, so the model still knows which variable it was.
 *
 * The rule for what is a secret, and its trade-offs:
 * - The name must END in the secret word (an optional `_KEY`/`_KEY_BASE` is part of the word):
 *   `TOKEN_TTL`, `PASSWORD_MIN_LENGTH`, `DB_PASSWORD_FILE`, `passwordHash`, `max_tokens` are about
 *   secrets, not secrets. A name like `TOKEN_VALUE` is missed.
 * - `auth` counts only after a prefix (`BASIC_AUTH`, `proxyAuth`): a bare `auth:` is mostly code.
 *   So does `pwd` (`MYSQL_PWD`), or bare (`Uid=sa;Pwd=…` in an ODBC connection string) with a
 *   value that is no path: `PWD=/home/…` is the working directory in every environment dump.
 * - A quoted value is a secret (up to its closing quote, spaces included), unless it is a
 *   reference: `"${DB_PASSWORD}"`, `"$TOKEN"`, `"{{ .Values.password }}"`, `"%SECRET%"`.
 * - A bare value is a secret unless it reads as code: a call, index or generic (`getPassword()`,
 *   `os.environ[`, `Option<String>`), a member path of names without inner digits (`process.env.X`,
 *   `settings.SECRET`; a dotted token such as a Discord bot token has them),
 *   a reference (`$TOKEN`), a type or keyword (`string`, `undefined`, `required`), a camelCase or
 *   PascalCase word (`userInput`, `SecretStr`), or a name holding a secret word itself
 *   (`password=password`, `token=auth_token`). So a letters-only camelCase password (`correctHorse`)
 *   stays; an all-lowercase one (`changeme`) or any with a digit or symbol (`hunter2xyz`) goes.
 * - Values shorter than 6 characters stay (short numbers such as `3600`, `true`, `None`).
 */

/** Secret words, each as its parts: `['api', 'key']` is `api_key`, `api-key`, `apikey`, `API_KEY`, `apiKey`, `ApiKey`, `Api-Key`. */
const WORDS: readonly (readonly string[])[] = [
  ['secret', 'key', 'base'],
  ['secret', 'key'],
  ['private', 'key'],
  ['access', 'key'],
  ['api', 'key'],
  ['app', 'key'],
  ['signing', 'key'],
  ['encryption', 'key'],
  ['master', 'key'],
  ['client', 'secret'],
  ['password'],
  ['passwd'],
  ['passphrase'],
  ['secret'],
  ['token'],
  ['credentials'],
  ['credential'],
]
/** Words that name a secret only after a prefix (see above). */
const PREFIXED: readonly (readonly string[])[] = [['pwd'], ['auth']]

const cap = (part: string): string => part[0]!.toUpperCase() + part.slice(1)

/** The spellings of a word: lower, UPPER (parts joined by `_`, `-` or nothing), camel and Pascal. */
function lowerUpperForms(parts: readonly string[]): string[] {
  return [parts.join('[_-]?'), parts.map(part => part.toUpperCase()).join('[_-]?'), parts[0]! + parts.slice(1).map(cap).join('')]
}
function capForms(parts: readonly string[]): string[] {
  return [parts.map(cap).join('-?')]
}
const alternatives = (forms: string[]): string => [...new Set(forms)].toSorted((a, b) => b.length - a.length).join('|')

/** The name's end: no identifier character after the word (`-` only as the last character). */
const NAME_END = '(?![A-Za-z0-9_]|-[A-Za-z0-9])'

/** A secret name's last word, with the prefix rules above, as a regular expression source (no flags). */
export const SECRET_NAME_SOURCE = '(?:'
  + `(?:${alternatives([...WORDS.flatMap(lowerUpperForms), ...WORDS.flatMap(capForms)])})`
  + `|(?<=[A-Za-z0-9][_-])(?:${alternatives(PREFIXED.flatMap(lowerUpperForms))})`
  + `|(?<=[a-z0-9]|[A-Za-z0-9][_-])(?:${alternatives(PREFIXED.flatMap(capForms))})`
  // a bare `Pwd=` is an ODBC connection string's password; a bare `PWD=/…` the working directory (BARE_PWD_PATH)
  + '|(?<![A-Za-z0-9_$])(?<pwd>pwd|PWD|Pwd)'
  + `)${NAME_END}`

/**
 * A substring every secret name holds (whatever its case): a text without one has no assignment,
 * so the detector is not run on it (redact.ts). Tested against every spelling above.
 */
export const SECRET_NAME_HINT = /pass|secret|token|key|credential|pwd|auth/i

/** A whole key (of a JSON object) that names a secret. */
export const SECRET_KEY = new RegExp(`${SECRET_NAME_SOURCE}$`)

/**
 * The assignment. Groups: `quoted` (a value in quotes, to its closing quote) or `secret` (a bare
 * value, to whitespace, a quote, a comma or semicolon); quotes may come escaped (JSON inside a
 * JSON string: a tool call writing a config file), and a value ends before an escaped quote or
 * backslash pair. A value does not begin with `=` or `>`: `a:=[REDACTED:secret]` read again as
 * `a:` and a value `=[REDACTED…` would redact its own marker (and `==` is a comparison).
 */
export const SECRET_ASSIGNMENT = new RegExp(
  String.raw`${SECRET_NAME_SOURCE}(?:\\{0,8}["'])?\s*(?::=|=>|[:=])\s*(?![=>])`
    + String.raw`(?:\\{0,8}["'\`](?<quoted>(?!\[REDACTED:)(?:[^"'\`\\\r\n]|\\(?![\\"'\`])){6,})|(?<secret>(?!\[REDACTED:)(?:[^\s"'\`,;\\]|\\(?![\\"'])){6,}))`,
  'g',
)

/** A value that points at a secret instead of holding it. */
const REFERENCE = /^(?:\$\{?[A-Za-z_]\w*\}?|\$?\{\{[^{}]*\}\}|%[A-Za-z_]\w*%)$/
/**
 * One name of a path as code spells it: letters, with at most 3 digits at its end (`db2`, `v1`).
 * Digits inside (`MTk4NjIy…`, `Cl2FMQ`) are a token's: a Discord bot token is three dotted
 * base64 runs, and was kept as a member path.
 */
const NAME = String.raw`[A-Za-z_$][A-Za-z_$]{0,63}[0-9]{0,3}`
const PATH = String.raw`${NAME}(?:(?:\.|::|->|\?\.)${NAME})*`
/** A call, index, generic or type expression: a name or member path followed by one of `(<[!?|`. */
const CALL_OR_TYPE = new RegExp(String.raw`^${PATH}[(<[!?|]`)
/** A member path of two names or more. */
const MEMBER = new RegExp(String.raw`^${NAME}(?:(?:\.|::|->|\?\.)${NAME})+$`)
/** camelCase or PascalCase words, each hump at least three letters (random mixed case rarely is). */
const CASED_WORDS = /^(?:[a-z]+|[A-Z][a-z]{2,})(?:[A-Z][a-z]{2,})+$|^[A-Z][a-z]{2,}$/
const KEYWORDS = new Set(['true', 'false', 'null', 'none', 'nil', 'undefined', 'string', 'str', 'number', 'integer', 'int', 'float', 'double', 'bool', 'boolean', 'bytes', 'buffer', 'object', 'unknown', 'any', 'void', 'required', 'optional', 'nullable', 'inherit', 'redacted', 'masked', 'hidden', 'omitted'])
const HOLDS_WORD = new RegExp(alternatives([...WORDS, ...PREFIXED].map(parts => parts.join('_?'))), 'i')

/** A path, as the working directory a bare `PWD` names is. */
const BARE_PWD_PATH = /^(?:[/~.]|[A-Za-z]:[\\/])/

/** An HTTP header holding credentials, as a key of its own (`{"headers": {"Authorization": "Basic …"}}`). */
const AUTHORIZATION_KEY = /^(?:proxy-)?authorization$/i

/** Whether an assignment's value is no secret after all (`groups` of SECRET_ASSIGNMENT). */
export function assignmentIsNoSecret(groups: Record<string, string | undefined>): boolean {
  const value = groups['quoted'] ?? groups['secret']!
  if (groups['pwd'] !== undefined && BARE_PWD_PATH.test(value)) return true
  return groups['quoted'] !== undefined ? quotedIsNoSecret(value) : bareIsNoSecret(value)
}

/** Whether a string value under a JSON key is a secret: the key names one (or is an Authorization header), and the value is no reference (nor the path of a bare `PWD`). */
export function secretUnderKey(key: string, value: string): boolean {
  if (AUTHORIZATION_KEY.test(key)) return !quotedIsNoSecret(value)
  const name = SECRET_KEY.exec(key)
  if (name === null || quotedIsNoSecret(value)) return false
  return name.groups?.['pwd'] === undefined || !BARE_PWD_PATH.test(value)
}

/** Whether a quoted value is no secret: a reference. */
export function quotedIsNoSecret(value: string): boolean {
  return REFERENCE.test(value)
}

/** Whether a bare value after a secret name is no secret (code, a reference, a type or keyword). */
export function bareIsNoSecret(bare: string): boolean {
  // the brackets that close around an argument (`connect(password=db_password)`) are not its value
  // (a loop: `[)\]}]+$` retries from every bracket of a long run of them)
  let end = bare.length
  while (end > 0 && ')]}'.includes(bare[end - 1]!)) end -= 1
  const value = bare.slice(0, end)
  if (REFERENCE.test(value) || CALL_OR_TYPE.test(value) || MEMBER.test(value)) return true
  if (!/^[A-Za-z_]+$/.test(value)) return false
  return CASED_WORDS.test(value) || KEYWORDS.has(value.toLowerCase()) || HOLDS_WORD.test(value)
}
