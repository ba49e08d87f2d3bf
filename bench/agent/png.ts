/**
 * A tiny RGB raster with lines, dots and a 5×7 bitmap font, encoded as PNG with node:zlib — enough
 * for a benchmark plot without a charting dependency.
 */
import { crc32, deflateSync } from 'node:zlib'

export type Rgb = readonly [number, number, number]

// 5×7 glyphs, one string of 7 rows per character ('#' = ink).
const GLYPHS: Record<string, string> = {
  '0': ' ### #   ##  ### # ###  ##   # ### ', '1': '  #   ##    #    #    #    #   ### ', '2': ' ### #   #    #  ##  #   #    #####',
  '3': '#####   #   #   ###     ##   # ### ', '4': '   #   ##  # # #  # #####   #    # ', '5': '######    ####     #    ##   # ### ',
  '6': '  ## #    #    #### #   ##   # ### ', '7': '#####    #   #   #   #    #    #   ', '8': ' ### #   ##   # ### #   ##   # ### ',
  '9': ' ### #   ##   # ####    #   #  ##  ', '.': '                              ##   ', '%': '##   ##  #   #   #   #   #  ##   ##',
  '/': '    #    #   #   #   #   #    #    ', '-': '               #####               ', '×': '     #   # # #   #   # # #   #     ',
  ' ': '                                   ', '(': '   #   #   #    #    #     #     # ', ')': ' #     #     #    #    #   #   #   ',
  ':': '      ##   ##        ##   ##       ', '=': '          #####     #####          ', ',': '                      ##   #   #   ',
  'A': ' ### #   ##   #######   ##   ##   #', 'B': '#### #   ##   ##### #   ##   ##### ', 'C': ' ### #   ##    #    #    #   # ### ',
  'D': '#### #   ##   ##   ##   ##   ##### ', 'E': '######    #    #### #    #    #####', 'F': '######    #    #### #    #    #    ',
  'G': ' ### #   ##    # ####   ##   # ####', 'H': '#   ##   ##   #######   ##   ##   #', 'I': ' ###   #    #    #    #    #   ### ',
  'J': '  ###   #    #    # #  # #  #  ##  ', 'K': '#   ##  # # #  ##   # #  #  # #   #', 'L': '#    #    #    #    #    #    #####',
  'M': '#   ### ### # ##   ##   ##   ##   #', 'N': '#   ###  ## # ##  ###   ##   ##   #', 'O': ' ### #   ##   ##   ##   ##   # ### ',
  'P': '#### #   ##   ##### #    #    #    ', 'Q': ' ### #   ##   ##   ## # ##  #  ## #', 'R': '#### #   ##   ##### # #  #  # #   #',
  'S': ' ####    #     ###     #    #####  ', 'T': '#####  #    #    #    #    #    #  ', 'U': '#   ##   ##   ##   ##   ##   # ### ',
  'V': '#   ##   ##   ##   ##   # # #   #  ', 'W': '#   ##   ##   ## # ## # ## # # # # ', 'X': '#   ##   # # #   #   # # #   ##   #',
  'Y': '#   ##   # # #   #    #    #    #  ', 'Z': '#####    #   #   #   #   #    #####',
}

export class Raster {
  readonly width: number
  readonly height: number
  private readonly pixels: Uint8Array

  constructor(width: number, height: number, background: Rgb = [255, 255, 255]) {
    this.width = width
    this.height = height
    this.pixels = new Uint8Array(width * height * 3)
    for (let index = 0; index < width * height; index += 1) this.pixels.set(background, index * 3)
  }

  set(x: number, y: number, color: Rgb): void {
    const px = Math.round(x)
    const py = Math.round(y)
    if (px < 0 || py < 0 || px >= this.width || py >= this.height) return
    this.pixels.set(color, (py * this.width + px) * 3)
  }

  rect(x: number, y: number, w: number, h: number, color: Rgb): void {
    for (let dy = 0; dy < h; dy += 1) for (let dx = 0; dx < w; dx += 1) this.set(x + dx, y + dy, color)
  }

  /** A line of the given thickness (square brush), dashed when `dash` > 0. */
  line(x0: number, y0: number, x1: number, y1: number, color: Rgb, thickness = 1, dash = 0): void {
    const steps = Math.max(1, Math.ceil(Math.hypot(x1 - x0, y1 - y0)))
    const half = Math.floor(thickness / 2)
    for (let step = 0; step <= steps; step += 1) {
      if (dash > 0 && Math.floor(step / dash) % 2 === 1) continue
      const x = x0 + ((x1 - x0) * step) / steps
      const y = y0 + ((y1 - y0) * step) / steps
      this.rect(Math.round(x) - half, Math.round(y) - half, thickness, thickness, color)
    }
  }

  dot(cx: number, cy: number, radius: number, color: Rgb): void {
    for (let dy = -radius; dy <= radius; dy += 1) for (let dx = -radius; dx <= radius; dx += 1) if (dx * dx + dy * dy <= radius * radius) this.set(cx + dx, cy + dy, color)
  }

  /** Text in the 5×7 font (upper-cased), `scale` pixels per font pixel; returns the width drawn. */
  text(x: number, y: number, value: string, color: Rgb, scale = 1): number {
    let cursor = x
    for (const char of value.toUpperCase()) {
      const glyph = GLYPHS[char] ?? GLYPHS[' ']!
      for (let row = 0; row < 7; row += 1) {
        for (let column = 0; column < 5; column += 1) if (glyph[row * 5 + column] === '#') this.rect(cursor + column * scale, y + row * scale, scale, scale, color)
      }
      cursor += 6 * scale
    }
    return cursor - x
  }

  png(): Buffer {
    const raw = Buffer.alloc((this.width * 3 + 1) * this.height)
    for (let row = 0; row < this.height; row += 1) {
      raw[row * (this.width * 3 + 1)] = 0 // filter: none
      raw.set(this.pixels.subarray(row * this.width * 3, (row + 1) * this.width * 3), row * (this.width * 3 + 1) + 1)
    }
    const chunk = (type: string, data: Buffer): Buffer => {
      const length = Buffer.alloc(4)
      length.writeUInt32BE(data.length)
      const body = Buffer.concat([Buffer.from(type, 'ascii'), data])
      const crc = Buffer.alloc(4)
      crc.writeUInt32BE(crc32(body) >>> 0)
      return Buffer.concat([length, body, crc])
    }
    const header = Buffer.alloc(13)
    header.writeUInt32BE(this.width, 0)
    header.writeUInt32BE(this.height, 4)
    header.set([8, 2, 0, 0, 0], 8) // 8-bit RGB, no interlace
    return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', header), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))])
  }
}
