/** Snippets and passages never cut a character in half (a lone surrogate may be refused by a provider). */
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ShadowStore } from '../src/index.ts'
import { message, tempDir } from './helpers.ts'

describe('passage and snippet bounds', () => {
  it('fall on character boundaries in text full of astral characters, wherever the match sits', async () => {
    const dir = tempDir()
    const store = await ShadowStore.open(join(dir.path, 'shadow.db'))
    const rows = Array.from({ length: 40 }, (_, index) =>
      message('astral', index + 1, `${'x'.repeat(index * 7)}${'😀𠀋'.repeat(300)} needle ${'🎉'.repeat(index * 11)} tail`))
    await store.append(rows)
    let hits = 0
    for (const query of ['needle', 'needle tail', 'tail']) {
      for (const hit of (await store.search(query, { sessionId: 'astral', limit: 40 })).hits) {
        hits += 1
        expect(hit.snippet.isWellFormed(), hit.snippet).toBe(true)
        const text = hit.message.text
        for (const at of [hit.passage.start, hit.passage.end]) expect(text.slice(0, at).isWellFormed() && text.slice(at).isWellFormed()).toBe(true)
      }
    }
    expect(hits).toBeGreaterThan(40)
    await store.close()
    dir.cleanup()
  })
})
