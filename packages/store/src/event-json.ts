/**
 * The event JSON without a second copy of the text. A message's text is almost always inside
 * its event JSON verbatim (JSON-escaped): the stored form cuts that copy out and marks where it
 * was, and reading splices the text back in, byte for byte. Event JSON that does not hold the
 * text verbatim is deflated with the text as the dictionary (same saving, slower). Rows written
 * before schema v4 hold the plain JSON as TEXT and are read as they are.
 *
 * Schema v6 (`TOKENIZED`) also replaces the fixed pieces of dsh's event JSON (keys, event types,
 * the row's own ISO time) by single control bytes, which JSON text never holds unescaped: a
 * lookup table, no compressor state, ~2 µs a row either way. JSON that holds a control byte
 * keeps the v4 form.
 *
 * Measured on bench:search's messages (605 B text, 731 B JSON): splice 131 B at ~5 µs a row;
 * tokenized splice ~35 B; raw deflate with the text as dictionary 118 B at ~20 µs; zstd
 * (node:zlib) with the text as dictionary 120-170 B at ~100 µs a call, too slow per message.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import { ShadowStoreError } from './errors.ts'

const SPLICED = 1
const DEFLATED = 2
const TOKENIZED = 3

/** Where the text goes back (TOKENIZED), and the row's own time as ISO 8601. */
const TEXT_MARK = '\u0001'
const TIME_MARK = '\u0002'
/**
 * Fixed pieces of dsh session events (`type`, `seq`, `time`, `data`, message blocks, sources,
 * tool calls). Never reorder or edit: stored rows refer to them by position. Each gets the
 * control character 0x03 + its index (up to 0x1f).
 */
const PIECES = [
  '{"type":"user/message","seq":',
  '{"type":"assistant/message","seq":',
  '{"type":"tool/result","seq":',
  '{"type":"request/header","seq":',
  ',"time":"',
  '","data":{',
  '"message":{"role":"',
  '"content":[{"type":"text","text":"',
  '"}]',
  '"source":{"kind":"',
  '"callId":"',
  '"toolName":"',
  '"toolCalls":[',
  '"arguments":',
  '"name":"',
  '"id":"',
  '"surfaceOp":',
  '"sourceEventSeqs":[',
  '"usage":{',
  '"type":"',
  '"turn":',
  '"step":',
  '","',
  '":"',
  '}}',
] as const
const PIECE_BASE = 3
const PIECE_PATTERN = new RegExp(PIECES.toSorted((a, b) => b.length - a.length).map(piece => piece.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|'), 'g')
const PIECE_CODE = new Map<string, string>(PIECES.map((piece, index) => [piece, String.fromCharCode(PIECE_BASE + index)]))
/** C0 controls (and, to be safe, DEL and C1): JSON text holds the C0 ones only escaped. */
const CONTROL = /\p{Cc}/u
const MARKS = /\p{Cc}/gu

function isoTime(time: number | undefined): string | undefined {
  if (time === undefined || !Number.isFinite(time)) return undefined
  const date = new Date(time)
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString()
}

function tokenize(before: string, after: string, time: number | undefined): Uint8Array {
  const iso = isoTime(time)
  const swap = (part: string): string => {
    const pieces = part.replace(PIECE_PATTERN, piece => PIECE_CODE.get(piece)!)
    return iso === undefined ? pieces : pieces.replace(iso, TIME_MARK)
  }
  return Buffer.concat([Buffer.of(TOKENIZED), Buffer.from(`${swap(before)}${TEXT_MARK}${swap(after)}`, 'utf8')])
}

function detokenize(stored: string, escaped: string, time: number | undefined): string {
  return stored.replace(MARKS, mark => {
    // DEL and C1 controls may stand in JSON text unescaped; only C0 ones are marks
    if (mark.charCodeAt(0) >= 0x20) return mark
    if (mark === TEXT_MARK) return escaped
    if (mark === TIME_MARK) {
      const iso = isoTime(time)
      if (iso === undefined) throw new ShadowStoreError('CORRUPT', 'stored event JSON needs the row time to be read')
      return iso
    }
    const piece = PIECES[mark.charCodeAt(0) - PIECE_BASE]
    if (piece === undefined) throw new ShadowStoreError('CORRUPT', 'stored event JSON has an unknown piece')
    return piece
  })
}

/** `time` is the row's time: the JSON's copy of it (ISO 8601) is then stored as one byte. */
export function packEventJson(json: string, text: string, time?: number): Uint8Array | string {
  if (text.length < 16) return json
  const escaped = JSON.stringify(text).slice(1, -1)
  const at = json.indexOf(escaped)
  if (at >= 0 && !CONTROL.test(json)) return tokenize(json.slice(0, at), json.slice(at + escaped.length), time)
  if (at >= 0) {
    const rest = Buffer.from(json.slice(0, at) + json.slice(at + escaped.length), 'utf8')
    const head = Buffer.allocUnsafe(5)
    head[0] = SPLICED
    // where the text goes back, in UTF-8 bytes of the remainder
    head.writeUInt32BE(Buffer.byteLength(json.slice(0, at), 'utf8'), 1)
    return Buffer.concat([head, rest])
  }
  const packed = deflateRawSync(Buffer.from(json, 'utf8'), { dictionary: Buffer.from(escaped, 'utf8') })
  if (packed.length + 1 >= Buffer.byteLength(json, 'utf8')) return json
  return Buffer.concat([Buffer.of(DEFLATED), packed])
}

export function unpackEventJson(value: unknown, text: string, time?: number): string {
  if (typeof value === 'string') return value
  const bytes = Buffer.from(value as Uint8Array)
  if (bytes.length === 0) return ''
  const escaped = JSON.stringify(text).slice(1, -1)
  switch (bytes[0]) {
    case SPLICED: {
      const at = bytes.readUInt32BE(1)
      const rest = bytes.subarray(5)
      return rest.subarray(0, at).toString('utf8') + escaped + rest.subarray(at).toString('utf8')
    }
    case TOKENIZED:
      return detokenize(bytes.subarray(1).toString('utf8'), escaped, time)
    case DEFLATED:
      return inflateRawSync(bytes.subarray(1), { dictionary: Buffer.from(escaped, 'utf8') }).toString('utf8')
    default:
      throw new ShadowStoreError('CORRUPT', `stored event JSON has an unknown format (${bytes[0]})`)
  }
}
