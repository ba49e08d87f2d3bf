/**
 * Secret redaction before anything reaches the store file or its search index. Optional (off by
 * default): the model already saw these bytes, but a long-lived file on disk should not keep them.
 * Deterministic and idempotent, so a verifier redacts a log event the same way and compares hashes
 * of the redacted form (see `rowHash`).
 */
import { invalid } from './errors.ts'
import { needleMatcher } from './pieces.ts'
import { assignmentIsNoSecret, SECRET_ASSIGNMENT, SECRET_NAME_HINT, secretUnderKey } from './redact-names.ts'

export interface RedactionOptions {
  /** Use the built-in detectors (provider API keys, tokens, private keys, secret assignments: redact-names.ts). Default true. */
  readonly builtins?: boolean
  /**
   * Extra patterns, each a JavaScript regular expression source (`sk_[a-z0-9]{20,}`) or a
   * literal (`/acme-[0-9a-f]{32}/i`). A named group `secret` limits the replacement to it.
   */
  readonly patterns?: readonly string[]
}

export interface Detector {
  readonly kind: string
  readonly pattern: RegExp
  /**
   * A pattern every match contains a match of (a fixed part of it): a text without one is not
   * scanned. An event of 400,000 one-character blocks ran all ten detectors on each of its
   * 1.2 million strings (keys too) and took 2.2-3.1 s; a test of the hints is a fraction of that.
   */
  readonly hint?: RegExp
  /** A match that is no secret after all (its groups say so): left as it is. */
  readonly keep?: (groups: Record<string, string | undefined>) => boolean
}

/*
 * Every built-in pattern runs in linear time on any input: quantifiers that could rescan the rest
 * of the text from each start are bounded, and a run that can only begin a match at its first
 * character is anchored there with a lookbehind (`eyJ-eyJ-eyJ-…` tries one start, not one per
 * repeat). Private keys are found by a scan (see `privateKeys`), not a lazy `[\s\S]*?`.
 */
/** The built-in detectors (exported for the test that their hints are in every match). */
export const BUILTINS: readonly Detector[] = [
  { kind: 'api-key', pattern: /\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}/g, hint: /sk-/ },
  { kind: 'github-token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})/g, hint: /gh[pousr]_|github_pat_/ },
  { kind: 'aws-key', pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, hint: /AKIA|ASIA/ },
  { kind: 'slack-token', pattern: /\bxox[abprs]-[A-Za-z0-9-]{10,}/g, hint: /xox/ },
  { kind: 'google-key', pattern: /\bAIza[0-9A-Za-z_-]{35}/g, hint: /AIza/ },
  { kind: 'stripe-key', pattern: /\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}/g, hint: /k_(?:live|test)_/ },
  { kind: 'jwt', pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, hint: /eyJ/ },
  { kind: 'bearer', pattern: /\b[Bb]earer\s+(?<secret>[A-Za-z0-9._~+/-]{16,}=*)/g, hint: /[Bb]earer/ },
  // a name ending in a secret word and its value (redact-names.ts: what counts, and why)
  { kind: 'secret', pattern: SECRET_ASSIGNMENT, hint: SECRET_NAME_HINT, keep: assignmentIsNoSecret },
  // an HTTP header's credentials after their scheme (`-H 'Authorization: Basic dXNlcjpw…'`); Bearer is above
  { kind: 'authorization', pattern: /\b(?:[Aa]uthorization|AUTHORIZATION)(?:\\{0,8}["'])?[ \t]*[:=][ \t]*(?:\\{0,8}["'])?(?:[Bb]asic|BASIC|[Tt]oken)[ \t]+(?<secret>[A-Za-z0-9._~+/-]{8,}=*)/g, hint: /uthorization|UTHORIZATION/ },
  // scheme ≤ 32, user and password ≤ 1024 characters: each start looks a bounded way ahead
  { kind: 'url-credentials', pattern: /\b[a-z][a-z0-9+.-]{0,31}:\/\/[^\s/:@]{1,1024}:(?<secret>[^\s/@]{3,1024})@/gi, hint: /:\/\// },
]

/**
 * The shortest text any built-in detector matches (`a://b:pwd@` and `Pwd=abcdef`, 10 characters;
 * every token shape is longer): a shorter string is not looked at.
 */
export const MIN_BUILTIN_CHARS = 10

const KEY_BEGIN = /-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----/g
const KEY_END = /-----END [A-Z ]{0,40}PRIVATE KEY-----/g
/**
 * The base64 body after a BEGIN line that has no END (output cut off mid-key), its line breaks
 * raw or escaped (`\n` in a JSON file shown as text: a service account's `private_key` cut off
 * kept every line after its BEGIN).
 */
const KEY_BODY = /(?:[A-Za-z0-9+/=\r\n]|\\{1,8}[nr])*/y

/**
 * PEM private key blocks, BEGIN to END, in one left-to-right pass. Once a BEGIN has no END after
 * it, no later one has either: the rest is searched for bodies only, never rescanned per header.
 */
function privateKeys(text: string, removed?: (value: string) => void): string {
  if (!text.includes('PRIVATE KEY-----')) return text
  const marker = '[REDACTED:private-key]'
  let out = ''
  let at = 0
  let ends = true
  KEY_BEGIN.lastIndex = 0
  for (let begin = KEY_BEGIN.exec(text); begin !== null; begin = KEY_BEGIN.exec(text)) {
    const bodyFrom = begin.index + begin[0].length
    let stop: number
    if (ends) {
      KEY_END.lastIndex = bodyFrom
      const end = KEY_END.exec(text)
      if (end === null) ends = false
      stop = end === null ? -1 : end.index + end[0].length
    } else stop = -1
    if (stop === -1) {
      KEY_BODY.lastIndex = bodyFrom
      KEY_BODY.exec(text)
      stop = KEY_BODY.lastIndex
    }
    removed?.(text.slice(begin.index, stop))
    out += text.slice(at, begin.index) + marker
    at = stop
    KEY_BEGIN.lastIndex = stop
  }
  return out + text.slice(at)
}

/** Longest custom pattern source accepted. */
const MAX_PATTERN_CHARS = 1_000

function compile(source: string, index: number): Detector {
  if (typeof source !== 'string' || source.length === 0) throw invalid(`redaction pattern ${index} must be a non-empty string`)
  if (source.length > MAX_PATTERN_CHARS) throw invalid(`redaction pattern ${index} is longer than ${MAX_PATTERN_CHARS} characters`)
  const literal = /^\/(.+)\/([a-z]*)$/s.exec(source)
  let pattern: RegExp
  try {
    const flags = new Set(['g', ...(literal?.[2] ?? '')])
    pattern = new RegExp(literal?.[1] ?? source, [...flags].join(''))
  } catch (error) {
    throw invalid(`redaction pattern ${index} is not a valid regular expression: ${error instanceof Error ? error.message : String(error)}`)
  }
  // a pattern that matches nothing-at-all would stamp markers between every character
  if (new RegExp(pattern.source, pattern.flags.replace('g', '')).test('')) throw invalid(`redaction pattern ${index} matches the empty string`)
  return { kind: 'custom', pattern }
}

/** One secret a redaction takes out: the detector's kind and the characters removed. */
export interface Removed {
  readonly kind: string
  readonly value: string
}

/** Shortest line of a secret found in rendered text that is also taken out of a JSON document's strings. */
const MIN_CARRIED_CHARS = 6
/** Rounds of carrying at most (each removes text; real documents settle in one or two). */
const MAX_CARRY_ROUNDS = 4

/** The distinct lines of secrets to take out of a document. */
function carriedPieces(also: readonly Removed[]): Removed[] {
  const pieces = new Map<string, string>()
  for (const { kind, value } of also) {
    for (const line of value.split(/\r?\n/)) {
      const piece = line.trim()
      if (piece.length >= MIN_CARRIED_CHARS && !piece.startsWith('[REDACTED:') && !pieces.has(piece)) pieces.set(piece, kind)
    }
  }
  return [...pieces].map(([value, kind]) => ({ kind, value }))
}

/**
 * A function replacing every occurrence of the pieces in a string by its marker, in one pass over
 * the string (needleMatcher: the longest piece ending at each position). An event of 20,000
 * blocks carried 10,000 pieces, and looking for each in every string took seconds; so did looking
 * at every piece of a shared beginning at each position (4,000 values starting 'AAAAAA' before a
 * run of 200,000 A's: 41 s). Overlapping occurrences go as one marker, so no part of either stays;
 * its kind is that of the piece the covered run begins with (the first listed of two beginning there).
 */
function piecesScrubber(pieces: readonly Removed[]): (text: string) => string {
  const matcher = needleMatcher(pieces.map(piece => piece.value))
  return text => {
    // covered runs, each [start, end) with its kind: a match reaching back into runs joins them
    const runs: Array<{ start: number; end: number; piece: number }> = []
    matcher.scan(text, (start, end, piece) => {
      let run = { start, end, piece }
      while (runs.length > 0 && runs.at(-1)!.end > start) {
        const last = runs.pop()!
        if (last.start <= run.start) run = { start: last.start, end, piece: last.start < run.start ? last.piece : Math.min(last.piece, run.piece) }
      }
      runs.push(run)
    })
    if (runs.length === 0) return text
    let out = ''
    let at = 0
    for (const run of runs) {
      out += `${text.slice(at, run.start)}[REDACTED:${pieces[run.piece]!.kind}]`
      at = run.end
    }
    return out + text.slice(at)
  }
}

/**
 * `name`, or the first of `name#2`, `name#3`… not yet in `out`: two keys redacted alike (or one
 * redacted like a later real key) must not overwrite each other. `suffixes` remembers where each
 * name's search stopped (names are only added, so the ones below stay taken): searching from #2
 * for every key made 20,000 keys redacting alike take 35 s.
 */
function freeName(out: Record<string, unknown>, name: string, suffixes: Map<string, number>): string {
  if (!Object.hasOwn(out, name)) return name
  let n = suffixes.get(name) ?? 2
  while (Object.hasOwn(out, `${name}#${n}`)) n += 1
  suffixes.set(name, n + 1)
  return `${name}#${n}`
}

/**
 * A parsed document with every key through `key` and every string through `leaf` (given the key
 * it sits under, undefined in an array), structure kept. A loop over a stack of its places, not
 * a recursion: an event nested 1,900 deep (dsh still writes one up to ~4,000) overflowed the
 * call stack, and the failed append was retried with every later row of its session behind it.
 */
function mapDocument(root: unknown, key: (text: string) => string, leaf: (text: string, under: string | undefined) => string): unknown {
  type Container = Record<string | number, unknown>
  // containers still to fill, each with the one it came from: strings and scalars are put in place at once
  const stack: Array<{ source: unknown[] | Record<string, unknown>; out: Container }> = []
  const mapped = (value: unknown, under: string | undefined): unknown => {
    if (typeof value === 'string') return leaf(value, under)
    if (typeof value !== 'object' || value === null) return value
    // null prototype: a "__proto__" key from JSON.parse stays an ordinary key
    const out = (Array.isArray(value) ? Array.from({ length: value.length }) : Object.create(null)) as Container
    stack.push({ source: value as unknown[] | Record<string, unknown>, out })
    return out
  }
  const result = mapped(root, undefined)
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const { source, out } = next
    if (Array.isArray(source)) {
      for (let index = 0; index < source.length; index += 1) out[index] = mapped(source[index], undefined)
      continue
    }
    const suffixes = new Map<string, number>()
    for (const [name, item] of Object.entries(source)) out[freeName(out, key(name), suffixes)] = mapped(item, name)
  }
  return result
}

/** Every string of a parsed document (keys too) with each piece replaced by its marker. */
function withoutPieces(value: unknown, scrub: (text: string) => string): unknown {
  return mapDocument(value, scrub, scrub)
}

export class Redactor {
  /** The policy as given (validated): what a store saves and a verifier rebuilds. */
  readonly options: RedactionOptions
  private readonly detectors: readonly Detector[]
  private readonly builtins: boolean
  private scanCount = 0

  constructor(options: RedactionOptions = {}) {
    if (typeof options !== 'object' || options === null) throw invalid('redaction options must be an object')
    if (options.patterns !== undefined && !Array.isArray(options.patterns)) throw invalid('redaction patterns must be an array of strings')
    this.options = { ...(options.builtins === undefined ? {} : { builtins: options.builtins }), ...(options.patterns === undefined ? {} : { patterns: [...options.patterns] }) }
    this.builtins = options.builtins !== false
    this.detectors = [...(options.builtins === false ? [] : BUILTINS), ...(options.patterns ?? []).map(compile)]
  }

  /** The text with every detected secret replaced by `[REDACTED:<kind>]`. */
  text(text: string): string {
    return this.run(text)
  }

  /** What `text` takes out of this text: each secret (or whole match) with its detector's kind. */
  removed(text: string): Removed[] {
    const found: Removed[] = []
    this.run(text, (kind, value) => found.push({ kind, value }))
    return found
  }

  /** Detector scans run so far, one per detector per string scanned: what a scale test counts. */
  get scans(): number {
    return this.scanCount
  }

  private run(text: string, removed?: (kind: string, value: string) => void): string {
    let out = this.builtins ? privateKeys(text, removed === undefined ? undefined : value => removed('private-key', value)) : text
    for (const { kind, pattern, hint, keep } of this.detectors) {
      // a detector's hint is in every match of it: a text with none (or too short for any
      // built-in) keeps every byte, whatever the detector would have done to it
      if (hint !== undefined && (out.length < MIN_BUILTIN_CHARS || !hint.test(out))) continue
      this.scanCount += 1
      pattern.lastIndex = 0
      out = out.replace(pattern, (...args: unknown[]) => {
        const match = args[0] as string
        const last = args.at(-1)
        const groups = typeof last === 'object' && last !== null ? last as Record<string, string | undefined> : undefined
        if (groups !== undefined && keep?.(groups) === true) return match
        const secret = groups?.['secret'] ?? groups?.['quoted']
        if (secret === undefined || secret.length === 0) {
          removed?.(kind, match)
          return `[REDACTED:${kind}]`
        }
        removed?.(kind, secret)
        const at = match.lastIndexOf(secret)
        return `${match.slice(0, at)}[REDACTED:${kind}]${match.slice(at + secret.length)}`
      })
    }
    return out
  }

  /**
   * A JSON document with every string redacted, keys included (a key can be a secret too), and
   * every string under a secret-named key replaced whole. Structure kept, still valid JSON.
   * `also`: secrets found elsewhere in the parsed document (in the text it renders to: a name and
   * its value in two content blocks), taken out of every string too, each line of at least
   * MIN_CARRIED_CHARS characters (a line that short is no secret's whole and would hit ordinary text).
   */
  json(json: string, also?: (parsed: unknown) => readonly Removed[]): string {
    let parsed: unknown
    try {
      parsed = JSON.parse(json)
    } catch {
      return this.text(json)
    }
    const changed = { any: false }
    let redacted = this.value(parsed, changed)
    let text = JSON.stringify(redacted)
    // what the redacted strings render to is looked at too: a marker can make a name the next
    // block's value (`password:` then `password::x` renders, redacted, to `password:` and a line
    // `password:[REDACTED:secret]`, a secret's value to the text redaction; found in CI by the
    // property test, seed 1875620099): a later pass would otherwise take it out then
    let carried = also === undefined ? [] : carriedPieces(changed.any ? [...also(parsed), ...also(redacted)] : also(parsed))
    // A marker put in where a carried piece was can make a match of its own (`]ghp_…` begins a
    // word), and the new document can render to one: the strings are redacted again and what the
    // document renders to is looked at again until neither changes anything, so a stored document
    // redacts to itself (a later pass does not rewrite it, nor its hash)
    for (let round = 0; round < MAX_CARRY_ROUNDS && carried.length > 0; round += 1) {
      const next = this.value(withoutPieces(redacted, piecesScrubber(carried)))
      const nextText = JSON.stringify(next)
      const again = carriedPieces(also!(next))
      const settled = nextText === text && JSON.stringify(again) === JSON.stringify(carried)
      redacted = next
      text = nextText
      carried = again
      if (settled) break
    }
    return text
  }

  /** Every string (keys too) redacted; `changed.any` set when one was (a document left as it was renders as it did). */
  private value(value: unknown, changed?: { any: boolean }): unknown {
    const noted = (before: string, after: string): string => {
      if (changed !== undefined && after !== before) changed.any = true
      return after
    }
    return mapDocument(value, key => noted(key, this.text(key)), (item, under) => noted(item, this.builtins && under !== undefined && item.length > 0 && !item.startsWith('[REDACTED:') && secretUnderKey(under, item)
      ? '[REDACTED:secret]'
      : this.text(item)))
  }
}
