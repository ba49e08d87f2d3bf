/**
 * A doc's stored tokens (session-index.ts `tokens`): its pieces and camelCase parts as (key code,
 * at, length) triples, packed as variable-length integers (the position as the step from the one
 * before): ~4-5 bytes a token where three int32 took 12 (a seventh of a session index's heap).
 * `scans` reads them back in order; nothing reads one token alone.
 */

/** A doc without tokens. */
export const NO_TOKENS = new Uint8Array(0)

/** Bytes a triple may take packed: three integers of up to 5 bytes. */
export const MAX_TRIPLE_BYTES = 15

/** Pack `length` values of `triples` (a multiple of 3) into `out` from `offset`; the offset after them. */
export function packTriples(triples: Int32Array, length: number, out: Uint8Array, offset: number): number {
  let at = offset
  let previous = 0
  for (let index = 0; index < length; index += 3) {
    const position = triples[index + 1]!
    at = putUnsigned(out, at, triples[index]!)
    // the step from the previous position, zigzagged (a part may start before its whole's end, never before its start)
    const step = position - previous
    at = putUnsigned(out, at, ((step << 1) ^ (step >> 31)) >>> 0)
    at = putUnsigned(out, at, triples[index + 2]!)
    previous = position
  }
  return at
}

/** The triples packed in a array of their own. */
export function packedCopy(triples: Int32Array, length: number): Uint8Array {
  if (length === 0) return NO_TOKENS
  const out = new Uint8Array((length / 3) * MAX_TRIPLE_BYTES)
  return out.slice(0, packTriples(triples, length, out, 0))
}

/** Bytes per chunk of kept tokens, at most (the first ones are smaller: a short session holds few). */
const TOKEN_CHUNK = 1 << 18
const FIRST_TOKEN_CHUNK = 1 << 12

/**
 * Where a session index keeps its docs' packed tokens: views of shared chunks (a typed array of its
 * own per message costs an allocation of its own, page faults included).
 */
export class TokenChunks {
  /** Bytes of the chunks made that no tokens fill yet (a session index's estimate counts them). */
  slack = 0
  private chunk = new Uint8Array(0)
  private used = 0

  /** `length` values of `triples` packed and kept: a view of a chunk, or an array of its own when large. */
  keep(triples: Int32Array, length: number): Uint8Array {
    if (length === 0) return NO_TOKENS
    const most = (length / 3) * MAX_TRIPLE_BYTES
    if (most > TOKEN_CHUNK / 4) return packedCopy(triples, length)
    if (this.used + most > this.chunk.length) {
      this.chunk = new Uint8Array(Math.min(TOKEN_CHUNK, Math.max(FIRST_TOKEN_CHUNK, this.chunk.length * 2, most)))
      this.used = 0
      // the old chunk's tail is lost; the new chunk's is counted until it fills
      this.slack += this.chunk.length
    }
    const end = packTriples(triples, length, this.chunk, this.used)
    const kept = this.chunk.subarray(this.used, end)
    this.slack -= end - this.used
    this.used = end
    return kept
  }
}

/** Reads packed triples in order: `next` until it is false, then `code`, `at`, `length` of the one read. */
export class TokenReader {
  code = 0
  at = 0
  length = 0
  private bytes: Uint8Array = NO_TOKENS
  private offset = 0

  start(bytes: Uint8Array): void {
    this.bytes = bytes
    this.offset = 0
    this.at = 0
  }

  next(): boolean {
    // decoded in locals, the fields written once a triple: with a field write per byte a session search's token scans took about twice as long
    const bytes = this.bytes
    let offset = this.offset
    if (offset >= bytes.length) return false
    let byte = bytes[offset++]!
    let code = byte & 0x7f
    for (let scale = 128; (byte & 0x80) !== 0; scale *= 128) {
      byte = bytes[offset++]!
      code += (byte & 0x7f) * scale
    }
    byte = bytes[offset++]!
    let step = byte & 0x7f
    for (let scale = 128; (byte & 0x80) !== 0; scale *= 128) {
      byte = bytes[offset++]!
      step += (byte & 0x7f) * scale
    }
    byte = bytes[offset++]!
    let length = byte & 0x7f
    for (let scale = 128; (byte & 0x80) !== 0; scale *= 128) {
      byte = bytes[offset++]!
      length += (byte & 0x7f) * scale
    }
    this.offset = offset
    this.code = code
    this.at += (step >>> 1) ^ -(step & 1)
    this.length = length
    return true
  }
}

function putUnsigned(out: Uint8Array, offset: number, value: number): number {
  let at = offset
  let rest = value
  while (rest >= 0x80) {
    out[at++] = (rest & 0x7f) | 0x80
    rest = Math.floor(rest / 128)
  }
  out[at++] = rest
  return at
}
