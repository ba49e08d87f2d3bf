/**
 * The event JSON without a second copy of the text. A message's text is almost always inside
 * its event JSON verbatim (JSON-escaped): the stored form cuts that copy out and keeps where it
 * was, and reading splices the text back in, byte for byte. Event JSON that does not hold the
 * text verbatim is deflated with the text as the dictionary (same saving, slower). Rows written
 * before schema v4 hold the plain JSON as TEXT and are read as they are.
 *
 * Measured on bench:search's messages (605 B text, 731 B JSON): splice 131 B at ~5 µs a row;
 * raw deflate with the text as dictionary 118 B at ~20 µs; zstd (node:zlib) with the text as
 * dictionary 120-170 B at ~100 µs a call, too slow per message, more so to read back.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib'
import { ShadowStoreError } from '../errors.ts'

const SPLICED = 1
const DEFLATED = 2

export function packEventJson(json: string, text: string): Uint8Array | string {
  if (text.length < 16) return json
  const escaped = JSON.stringify(text).slice(1, -1)
  const at = json.indexOf(escaped)
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

export function unpackEventJson(value: unknown, text: string): string {
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
    case DEFLATED:
      return inflateRawSync(bytes.subarray(1), { dictionary: Buffer.from(escaped, 'utf8') }).toString('utf8')
    default:
      throw new ShadowStoreError('CORRUPT', `stored event JSON has an unknown format (${bytes[0]})`)
  }
}
