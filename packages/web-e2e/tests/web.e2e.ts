/**
 * Shadow Context in the real dsh 0.1.0-rc.8 web app, in headless Chromium (`npm run test:web`).
 *
 * Installs the packed tarball the way the README tells a user to, boots `dsh web --no-open` on
 * loopback with an offline scripted provider, plays a session that compacts several times, and
 * checks in the browser: checkpoint nodes, one expanded into the originals (byte for byte against
 * the store), paging, a recall marker and its originals, the panel's search in English and
 * Chinese, the same view after a reload and after a server restart (a cold session opened from
 * history), the endpoint's typed errors, one compaction row per compaction (also in a Standard
 * session, where compaction-basic compacts), `/recall` in the composer and the panel's workspace
 * search. Screenshots go to packages/web-e2e/artifacts/; `npm run screenshots` (this run with
 * SHADOW_DOCS_SCREENSHOTS=1) also copies the README's set into docs/screenshots/.
 *
 * Needs a Chromium: `/usr/bin/chromium` (Debian: `apt-get install -y chromium`) or `CHROMIUM_PATH`.
 * Without one this fails; it never skips.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ShadowStore } from '@dsh-shadow/store'
import { dshWebUrl, launcherHome, launcherPatch, stopGroup } from '@dsh-shadow/testing'
import { chromium, type Browser, type Locator, type Page } from 'playwright-core'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'

const repo = fileURLToPath(new URL('../../..', import.meta.url))
const launcher = fileURLToPath(new URL('../node_modules/@deepseek-ai/dsh/lib/bin.js', import.meta.url))
const provider = fileURLToPath(new URL('./fixtures/web-provider.mjs', import.meta.url))
const artifacts = fileURLToPath(new URL('../artifacts/', import.meta.url))
const chromiumPath = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium'
const docsScreenshots = fileURLToPath(new URL('../../../docs/screenshots/', import.meta.url))
/** The screenshots the READMEs show, refreshed by `npm run screenshots`. */
const DOC_SHOTS = [
  'chat-collapsed-checkpoints.png', 'chat-expanded-checkpoint.png', 'chat-recall-marker.png', 'chat-recall-command.png',
  'chat-standard-compaction.png', 'panel-search.png', 'panel-timeline.png', 'panel-workspace-search.png',
]

/** The session the test plays: facts in English and Chinese, one turn with many messages, one recall. */
const PROMPTS = [
  '(turn 1) [bulk 11] Inventory the CI machines before we prune anything.',
  '(turn 2) The staging database listens on port 5433 — keep "pg-staging" <primary> & its replica in sync.',
  '(turn 3) 请把缓存过期时间统一改成九十秒，并记录在 docs/cache.md 里。',
  '(turn 4) Rotate the signing key kid=ops-2026-11-rot3 after the release; tabs\tand  double  spaces stay.',
  '(turn 5) The flaky test is tests/net/retry.spec.ts: it fails with ECONNRESET on 127.0.0.1:6380.',
  '(turn 6) 部署窗口定在周四晚上十点，负责人是王磊。',
  '(turn 7) [recall port 5433] Which port did we pick for staging?',
]

let work: string
let home: string
let env: NodeJS.ProcessEnv
let server: ChildProcess | undefined
/** Everything the dsh processes printed, for the check that our rows logged no warning. */
let serverOutput = ''
let base: string
let browser: Browser
let page: Page
const timings: string[] = []
let failed = false
/** The Standard session (compaction-basic): Shadow Context must never store it. */
let basicId: string | undefined

function dsh(args: readonly string[]): void {
  const result = spawnSync(process.execPath, [launcher, ...args], { cwd: work, env, encoding: 'utf8', timeout: 300_000 })
  expect(result.status, `dsh ${args.join(' ')}\n${result.stdout}\n${result.stderr}`).toBe(0)
}

async function startServer(): Promise<void> {
  const child = spawn(process.execPath, [launcher, 'web', '--no-open', '--host', '127.0.0.1', '--port', '0'], { cwd: work, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  server = child
  base = await dshWebUrl(child, text => void (serverOutput += text))
}

async function stopServer(): Promise<void> {
  const child = server
  server = undefined
  await stopGroup(child) // the launcher and its workers: the group this test started
}

/** An `/api` call the way the browser's connection makes it, from the page (same origin). */
async function rpc(endpoint: string, payload: unknown): Promise<{ ok: boolean; value?: unknown; error?: { code: string; message: string } }> {
  return page.evaluate(async ([target, body]) => {
    const response = await fetch(`/api/${target}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'client-request', rpcId: crypto.randomUUID(), method: target, payload: body }) })
    return ((await response.json()) as { result: { ok: boolean; value?: unknown; error?: { code: string; message: string } } }).result
  }, [endpoint, payload] as const)
}

async function openApp(): Promise<void> {
  await page.goto(base)
}

async function shot(name: string): Promise<void> {
  mkdirSync(artifacts, { recursive: true })
  await page.screenshot({ path: join(artifacts, name) })
}

/** The DOM as the page functions below use it (this file is type-checked without the DOM library). */
interface DomNode { getAttribute(name: string): string | null; readonly textContent: string | null }

function attributes(locator: Locator, name: string): Promise<string[]> {
  return locator.evaluateAll((nodes, attribute) => nodes.map(node => (node as unknown as DomNode).getAttribute(attribute) ?? ''), name)
}

/** Shadow id and exact text of every original a locator holds. */
function originals(locator: Locator): Promise<Array<{ id: string; text: string }>> {
  return locator.locator('[data-shadow-original]').evaluateAll(nodes => nodes.map(node => ({
    id: (node as unknown as DomNode).getAttribute('data-shadow-original') ?? '',
    text: (node as unknown as DomNode).textContent ?? '',
  })))
}

/** What the view shows about Shadow Context, to compare across reloads and restarts. */
async function viewState(): Promise<{ checkpoints: string[]; recalls: number; totals: string }> {
  await page.locator('[data-shadow-panel]').waitFor({ timeout: 60_000 })
  await page.locator('[data-shadow-checkpoint]').first().waitFor({ timeout: 60_000 })
  return {
    checkpoints: await attributes(page.locator('[data-shadow-checkpoint]'), 'data-shadow-checkpoint'),
    recalls: await page.locator('[data-shadow-recall]').count(),
    totals: (await page.locator('[data-shadow-totals]').textContent()) ?? '',
  }
}

async function storeText(shadowId: string): Promise<string> {
  const store = await ShadowStore.open(join(home, 'shadow-context', 'shadow.db'), { readOnly: true })
  try {
    const message = await store.message(shadowId)
    if (message === undefined) throw new Error(`store has no ${shadowId}`)
    return message.text
  } finally {
    await store.close()
  }
}

/** The `compaction/summary` events of a session, through dsh's own `session.history` (paged back to seq 0). */
async function compactionSummaries(target: string): Promise<Array<{ compactionId: string; provider: string }>> {
  const found: Array<{ compactionId: string; provider: string }> = []
  let beforeSeq: number | undefined
  for (;;) {
    const history = await rpc('session.history', { sessionId: target, maxMessages: 500, ...(beforeSeq === undefined ? {} : { beforeSeq }) })
    expect(history.ok, JSON.stringify(history.error)).toBe(true)
    const value = history.value as { events: Array<{ event: { type: string; seq: number; data: { compactionId?: string; provider?: string } } }>; hasMore: boolean }
    found.unshift(...value.events.filter(entry => entry.event.type === 'compaction/summary').map(entry => ({ compactionId: String(entry.event.data.compactionId), provider: String(entry.event.data.provider) })))
    if (!value.hasMore || value.events.length === 0) return found
    beforeSeq = Math.min(...value.events.map(entry => entry.event.seq))
  }
}

/** A new session from the sidebar, on the preset the chip's menu item names; its composer. */
async function newSession(preset: RegExp): Promise<Locator> {
  await page.locator('button').filter({ hasText: 'New Session' }).click()
  const composer = page.locator('textarea:not([readonly])').first()
  await composer.waitFor({ timeout: 60_000 })
  const chip = page.getByTitle('Agent preset for the session you are about to start')
  await chip.click()
  await page.getByRole('menuitem', { name: preset }).click()
  // dsh applies the pick to the blank session with an RPC (the chip is disabled meanwhile): a first
  // message sent before it returns starts the session with the preset it had (a Standard session
  // once ran its first turns as Shadow Context). The chip shows the pick, then is enabled again.
  await expect.poll(async () => preset.test((await chip.textContent()) ?? '') && await chip.isEnabled(), { timeout: 30_000 }).toBe(true)
  return composer
}

/** The compaction rows the chat shows: ours (`data-shadow-compaction`) and dsh's own, if any is drawn. */
async function compactionRows(): Promise<{ ours: string[]; dsh: number }> {
  return {
    ours: await attributes(page.locator('[data-shadow-compaction]'), 'data-shadow-compaction'),
    dsh: await page.locator('[data-compaction-icon]').count(), // dsh's own row marks its icon so
  }
}

beforeAll(async () => {
  if (!existsSync(chromiumPath)) {
    throw new Error(`No Chromium at ${chromiumPath}. Install it (Debian: apt-get install -y chromium) or set CHROMIUM_PATH; this test does not skip.`)
  }
  const step = (label: string): void => {
    if (process.env['SHADOW_WEB_DEBUG'] !== undefined) console.error(`[web-e2e] ${label}`)
  }
  // screenshots of this run only; the README run's transcript (readme-*) stays
  if (existsSync(artifacts)) for (const name of readdirSync(artifacts)) if (!name.startsWith('readme-')) rmSync(join(artifacts, name), { recursive: true, force: true })
  ;({ work, home, env } = launcherHome(repo, 'dsh-shadow-web-'))

  // 1. the package a user installs, added to the web profile as the README says
  step('pack')
  const packed = spawnSync(process.execPath, [join(repo, 'scripts/pack.mjs')], { cwd: repo, encoding: 'utf8' })
  expect(packed.status, packed.stderr).toBe(0)
  const tarball = packed.stdout.trim().split('\n').at(-1)!
  step(`install ${tarball}`)
  dsh(['plugin', '--profile', 'web', 'add', '-w', tarball])
  const profile = join(home, 'profiles', 'web')
  const manifest = JSON.parse(readFileSync(join(profile, 'package.json'), 'utf8')) as { dsh: { profile: { bundles: string[] } } }
  expect(manifest.dsh.profile.bundles).toContain('dsh-shadow-context') // our bundle patch joined the layers
  cpSync(join(profile, 'node_modules', 'dsh-shadow-context', 'presets', 'shadow-context'), join(home, '.agent-presets', 'shadow-context'), { recursive: true })

  // 2. the profile's own layer: the rc.8 launcher workaround, this test's offline provider, our preset as default
  writeFileSync(join(profile, 'cordis.patch.yml'), launcherPatch({ id: 'web-e2e-provider', path: provider, config: '{ contextWindow: 20000, padRepeat: 60 }' }, [
    '- id: agent-presets',
    '  config: { default: shadow-context }',
  ]))

  step('start server')
  await startServer()
  step(`server ${base}; launch chromium`)
  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-gpu-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  })
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  // rc.8 shows a one-time "Internal Testing Notice" dialog whenever it likes; dismiss it whenever it shows
  await page.addLocatorHandler(page.getByRole('button', { name: 'Continue', exact: true }), async button => {
    await button.click()
  })
})

beforeEach(({ onTestFailed }) => {
  onTestFailed(() => {
    failed = true
  })
})

afterAll(async () => {
  await browser?.close()
  await stopServer()
  if (process.env['SHADOW_DOCS_SCREENSHOTS'] === '1') {
    // only a run whose every test passed and took every shot replaces the docs' set
    const missing = DOC_SHOTS.filter(name => !existsSync(join(artifacts, name)))
    if (failed || missing.length > 0) console.error(`docs/screenshots not updated: ${failed ? 'a test failed' : `this run did not take ${missing.join(', ')}`}`)
    else for (const name of DOC_SHOTS) cpSync(join(artifacts, name), join(docsScreenshots, name))
  }
  if (timings.length > 0) console.log(`load times:\n${timings.join('\n')}`)
  if (work !== undefined) rmSync(work, { recursive: true, force: true })
})

describe('Shadow Context in the dsh web app', () => {
  let sessionId: string
  let before: Awaited<ReturnType<typeof viewState>>

  it('serves the client module and shows checkpoint nodes for a session that compacts', async () => {
    const started = Date.now()
    await openApp()
    const script = await page.evaluate(async () => (await fetch('/plugins/dsh-shadow-context/client.js')).text())
    expect(script.startsWith('window.__ModuleLoader__.load({')).toBe(true)
    const workspace = join(work, 'project')
    mkdirSync(workspace)
    expect((await rpc('workspace.create', { path: workspace })).ok).toBe(true)
    await openApp()
    timings.push(`first load to composer: ${Date.now() - started} ms`)
    // the composer is read-only (a workspace picker) until the workspace list has arrived
    const composer = page.locator('textarea:not([readonly])').first()
    // on a timeout, keep what the page showed: the failure is otherwise invisible
    await composer.waitFor({ timeout: 60_000 }).catch(async (error: unknown) => {
      await shot('composer-timeout.png')
      throw error
    })
    for (const prompt of PROMPTS) {
      await composer.click()
      await composer.fill(prompt)
      await page.keyboard.press('Enter')
      const turn = /\(turn (\d+)\)/.exec(prompt)![1]
      await page.getByText(`ANSWER ${turn}:`, { exact: false }).first().waitFor({ timeout: 120_000 })
    }
    before = await viewState()
    expect(before.checkpoints.length).toBeGreaterThanOrEqual(2)
    expect(Number(/(\d+) checkpoints/.exec(before.totals)?.[1])).toBeGreaterThanOrEqual(2)
    const store = await ShadowStore.open(join(home, 'shadow-context', 'shadow.db'), { readOnly: true })
    const sessions = await store.sessions()
    await store.close()
    expect(sessions).toHaveLength(1)
    sessionId = sessions[0]!.sessionId
    console.log(`session ${sessionId}: ${before.totals}; checkpoint nodes ${before.checkpoints.join(', ')}; recall markers ${before.recalls}`)
    // one row per compaction: each is our checkpoint node under dsh's title, dsh's own row is not drawn
    const summaries = await compactionSummaries(sessionId)
    expect(summaries.every(summary => summary.provider === 'shadow-context')).toBe(true)
    expect(before.checkpoints).toEqual(summaries.map(summary => summary.compactionId))
    expect(await compactionRows()).toEqual({ ours: summaries.map(() => 'shadow-context'), dsh: 0 })
    expect(await page.locator('[data-shadow-compaction-title]').allTextContents()).toEqual(summaries.map(() => 'Context compacted ·'))
    await page.locator('[data-shadow-checkpoint]').first().scrollIntoViewIfNeeded()
    await shot('chat-collapsed-checkpoints.png')
  })

  it('renders the Chinese text with a CJK font, not as missing-glyph boxes', async () => {
    // Mark the innermost element showing a Chinese prompt, then ask Chromium which platform fonts drew it.
    const han = await page.evaluate(`(() => {
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT)
      for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
        if (/[\\u4e00-\\u9fff]{4}/.test(node.textContent ?? '')) {
          node.parentElement.setAttribute('data-cjk-probe', '')
          return (node.textContent.match(/[\\u4e00-\\u9fff]/g) ?? []).length
        }
      }
      return 0
    })()`) as number
    expect(han, 'no Chinese text on the page').toBeGreaterThan(0)
    const cdp = await page.context().newCDPSession(page)
    await cdp.send('DOM.enable')
    await cdp.send('CSS.enable')
    const { root } = await cdp.send('DOM.getDocument', { depth: 0 })
    const { nodeId } = await cdp.send('DOM.querySelector', { nodeId: root.nodeId, selector: '[data-cjk-probe]' })
    const { fonts } = await cdp.send('CSS.getPlatformFontsForNode', { nodeId })
    await cdp.detach()
    console.log(`fonts drawing the Chinese prompt: ${fonts.map(font => `${font.familyName} (${font.glyphCount} glyphs)`).join(', ')}`)
    const cjkGlyphs = fonts.filter(font => /CJK|Han|Hei|Song|Ming|Kai|WenQuanYi|Droid Sans Fallback|\b(SC|TC|JP)\b/i.test(font.familyName)).reduce((sum, font) => sum + font.glyphCount, 0)
    expect(cjkGlyphs, `Chinese text drawn without a CJK font (${JSON.stringify(fonts)}); install one (Debian: apt-get install -y fonts-noto-cjk)`).toBeGreaterThanOrEqual(han)
  })

  it('expands a checkpoint into the originals, byte for byte, and pages through them', async () => {
    // Find the checkpoint holding one of our prompts, expand it, compare with the store and the prompt.
    let matched: string | undefined
    for (const id of before.checkpoints) {
      const checkpoint = page.locator(`[data-shadow-checkpoint="${id}"]`)
      await checkpoint.locator('[data-shadow-toggle]').click()
      await checkpoint.locator('[data-shadow-original]').first().waitFor({ timeout: 30_000 })
      const shown = await originals(checkpoint)
      for (const original of shown) expect(original.text).toBe(await storeText(original.id))
      matched = shown.map(original => original.text).find(text => PROMPTS.includes(text))
      if (matched !== undefined) {
        await checkpoint.scrollIntoViewIfNeeded()
        await shot('chat-expanded-checkpoint.png')
        break
      }
      await checkpoint.locator('[data-shadow-toggle]').click()
    }
    expect(matched, 'no checkpoint held one of the typed prompts').toBeDefined()

    // Paging: the first turn alone has more messages than a page holds.
    const paged = page.locator('[data-shadow-pager]').first()
    if (await paged.count() === 0) {
      const big = page.locator('[data-shadow-checkpoint]').first()
      await big.locator('[data-shadow-toggle]').click()
    }
    const pager = page.locator('[data-shadow-pager]').first()
    await pager.waitFor({ timeout: 30_000 })
    const firstRange = await pager.locator('[data-shadow-page-range]').textContent()
    const owner = page.locator('[data-shadow-checkpoint]').filter({ has: pager })
    const firstIds = await attributes(owner.locator('[data-shadow-original]'), 'data-shadow-original')
    await pager.locator('[data-shadow-page="next"]').click()
    await expect.poll(() => pager.locator('[data-shadow-page-range]').textContent()).not.toBe(firstRange)
    const nextIds = await attributes(owner.locator('[data-shadow-original]'), 'data-shadow-original')
    expect(nextIds.some(id => firstIds.includes(id))).toBe(false)
    expect(firstRange).toMatch(/^messages 1–20 of \d+$/)
  })

  it('marks the recall and opens what came back', async () => {
    const marker = page.locator('[data-shadow-recall="search"]').filter({ hasText: '5433' }).first()
    await marker.waitFor({ timeout: 30_000 })
    const link = marker.locator('[data-shadow-link]').first()
    const id = (await link.getAttribute('data-shadow-link'))!
    await link.click()
    const original = marker.locator(`[data-shadow-original="${id}"]`)
    await original.waitFor({ timeout: 30_000 })
    expect(await original.textContent()).toBe(await storeText(id))
    await marker.scrollIntoViewIfNeeded()
    await shot('chat-recall-marker.png')
  })

  it('searches the shadow from the panel in English and Chinese', async () => {
    const panel = page.locator('[data-shadow-panel]')
    await panel.locator('[data-shadow-panel-toggle]').click()
    for (const [query, needle] of [['5433 replica', '5433'], ['缓存过期', '缓存过期']] as const) {
      const input = panel.locator('[data-shadow-search-input]')
      await input.fill(query)
      await panel.locator('[data-shadow-search-submit]').click()
      const hits = panel.locator(`[data-shadow-results="${query}"] [data-shadow-hit]`)
      await hits.first().waitFor({ timeout: 30_000 })
      const first = hits.first()
      const id = (await first.getAttribute('data-shadow-hit'))!
      await first.locator('button').first().click()
      const original = first.locator(`[data-shadow-original="${id}"]`)
      await original.waitFor({ timeout: 30_000 })
      const text = (await original.textContent())!
      expect(text).toContain(needle)
      expect(text).toBe(await storeText(id))
    }
    expect(await panel.locator('[data-shadow-timeline-checkpoint]').count()).toBe(Number(/(\d+) checkpoints/.exec(before.totals)![1]))
    await shot('panel-search.png')
    await panel.locator('[data-shadow-timeline]').scrollIntoViewIfNeeded()
    await shot('panel-timeline.png')
  })

  it('answers /recall in the composer from the shadow, for the person only', async () => {
    // the panel, left open by the search above, would cover the answer
    const panel = page.locator('[data-shadow-panel]')
    if (await panel.getAttribute('data-shadow-panel-expanded') === 'true') await panel.locator('[data-shadow-panel-toggle]').click()
    const composer = page.locator('textarea:not([readonly])').first()
    await composer.click()
    await composer.fill('/recall 5433 replica')
    await page.keyboard.press('Enter')
    const answer = page.getByText(/Shadow Context search "5433 replica": \d+ of \d+ matching/).first()
    await answer.waitFor({ timeout: 60_000 })
    // dsh's command row opens into the whole answer (the hits, one per line) on a click
    await answer.click()
    await page.getByText(/1\. [a-z2-9]{6}\.\d+ · /).first().waitFor({ timeout: 10_000 }).catch(() => undefined)
    // the row at the top of the chat, its opened answer below it
    await answer.evaluate(node => (node as unknown as { scrollIntoView(options: unknown): void }).scrollIntoView({ block: 'start' }))
    await shot('chat-recall-command.png')
    // the command's answer names originals the store holds; it did not go to the model
    const text = (await answer.textContent()) ?? ''
    expect(text).toMatch(/[a-z2-9]{6}\.\d+/)
    expect(serverOutput).not.toContain('ANSWER 8:')
  })

  it('answers only for the caller\'s session, with typed errors', async () => {
    // the gateway's wire shape: { args: { sessionId, <parameter>... } }
    const missing = await rpc('shadowContext/read', { args: { sessionId, request: { id: 'zzzzzz.1' } } })
    expect(missing).toMatchObject({ ok: true, value: { ok: false, error: { code: 'NOT_FOUND' } } })
    const unknownField = await rpc('shadowContext/search', { args: { sessionId, request: { query: 'x', sql: 'select 1' } } })
    expect(unknownField).toMatchObject({ ok: true, value: { ok: false, error: { code: 'INVALID_INPUT' } } })
    const found = await rpc('shadowContext/read', { args: { sessionId, request: { checkpoint: before.checkpoints[0], limit: 1 } } })
    expect(found).toMatchObject({ ok: true, value: { ok: true, value: { start: 0 } } })
    // a session id the host does not know is refused by the gateway's session lookup, before our method runs
    const otherSession = await rpc('shadowContext/read', { args: { sessionId: 'no-such-session', request: { checkpoint: before.checkpoints[0] } } })
    expect(otherSession.ok, JSON.stringify(otherSession)).toBe(false)
  })

  it('shows the same view after a reload', async () => {
    const started = Date.now()
    await page.reload()
    const after = await viewState()
    timings.push(`reload to panel and checkpoint nodes: ${Date.now() - started} ms`)
    expect(after).toEqual(before)
    await shot('after-reload.png')
  })

  it('shows the same view for the cold session opened from history after a restart', async () => {
    await stopServer()
    await startServer()
    const started = Date.now()
    await openApp()
    await page.getByText('Shadow Context web check').first().click()
    const cold = await viewState()
    timings.push(`cold session (server restart) to panel and checkpoint nodes: ${Date.now() - started} ms`)
    expect(cold).toEqual(before)
    await shot('cold-session.png')
    // our rows (capture, engine, recall, reader) warned about nothing in either server lifetime
    expect(serverOutput).not.toMatch(/Shadow Context[^\n]*(warn|unavailable|cannot)/i)
  })

  it('shows a manual /compact as one row: our checkpoint in the command\'s own row', async () => {
    const composer = page.locator('textarea:not([readonly])').first()
    await composer.click()
    await composer.fill('(turn 9) One more note before compacting by hand: the release train leaves on Friday.')
    await page.keyboard.press('Enter')
    await page.getByText('ANSWER 9:', { exact: false }).first().waitFor({ timeout: 120_000 })
    const automatic = await compactionSummaries(sessionId)
    await composer.click()
    await composer.fill('/compact')
    await page.keyboard.press('Enter')
    await expect.poll(async () => (await compactionSummaries(sessionId)).length, { timeout: 60_000 }).toBe(automatic.length + 1)
    const summaries = await compactionSummaries(sessionId)
    const manual = summaries.at(-1)!
    expect(manual.provider).toBe('shadow-context')
    // dsh's /compact row (its own node kind) is where our checkpoint shows; no second row for it
    const row = page.locator('[data-chat-flow-kind="manual-compaction"]')
    await row.locator(`[data-shadow-checkpoint="${manual.compactionId}"]`).waitFor({ timeout: 60_000 })
    expect(await row.count()).toBe(1)
    expect(await attributes(page.locator('[data-shadow-checkpoint]'), 'data-shadow-checkpoint')).toEqual(summaries.map(summary => summary.compactionId))
    expect(await compactionRows()).toEqual({ ours: summaries.map(() => 'shadow-context'), dsh: 0 })
    expect(await row.locator('[data-shadow-compaction-title]').textContent()).toBe('Context compacted ·')
    await row.scrollIntoViewIfNeeded()
    await shot('chat-manual-compaction.png')
  })

  it('shows one compaction row per compaction in a Standard session too (compaction-basic), as dsh words it', async () => {
    // the preset chip of the new session, as the README says: "Standard" turns Shadow Context off
    const composer = await newSession(/^Standard mode/)
    for (let turn = 1; turn <= 6; turn += 1) {
      await composer.click()
      await composer.fill(`(turn ${turn}) [long 4] Standard session, note ${turn}.`)
      await page.keyboard.press('Enter')
      await page.getByText(`ANSWER ${turn}:`, { exact: false }).first().waitFor({ timeout: 120_000 })
    }
    const listed = await rpc('session.list', {})
    basicId = JSON.stringify(listed.value).match(/session-[0-9a-f-]{36}/g)?.find(id => id !== sessionId)
    expect(basicId, JSON.stringify(listed)).toBeDefined()
    const summaries = await compactionSummaries(basicId!)
    expect(summaries.length).toBeGreaterThanOrEqual(1)
    expect(summaries.every(summary => summary.provider !== 'shadow-context')).toBe(true)
    // another engine's rows are dsh's own (our renderer hands them back), one per compaction
    await expect.poll(compactionRows).toEqual({ ours: [], dsh: summaries.length })
    expect(await page.locator('[data-shadow-checkpoint]').count()).toBe(0)
    expect(await page.locator('[data-shadow-panel]').count()).toBe(0)
    const row = page.locator('button', { has: page.locator('[data-compaction-icon]') }).first()
    expect(await row.textContent()).toMatch(/Context compacted.*Compacted \d+ history items \(~\d+ tokens\)/)
    await row.click()
    await page.getByText('The earlier turns padded the context').first().waitFor({ timeout: 10_000 })
    await row.scrollIntoViewIfNeeded()
    await shot('chat-standard-compaction.png')
  })

  it('searches every session of the workspace from the panel when asked to', async () => {
    // the chip keeps the last choice (Standard, above) for the next session: pick Shadow Context again
    const composer = await newSession(/^Shadow Context/)
    await composer.fill('(turn 1) A second Shadow Context session in the same project.')
    await page.keyboard.press('Enter')
    await page.getByText('ANSWER 1:', { exact: false }).first().waitFor({ timeout: 120_000 })
    const panel = page.locator('[data-shadow-panel]')
    await panel.waitFor({ timeout: 60_000 })
    await panel.locator('[data-shadow-panel-toggle]').click()
    const query = '5433 replica'
    const search = async (scope: 'session' | 'workspace'): Promise<Locator> => {
      await panel.locator('[data-shadow-search-input]').fill(query)
      await panel.locator('[data-shadow-search-scope]').selectOption(scope)
      await panel.locator('[data-shadow-search-submit]').click()
      const results = panel.locator(`[data-shadow-results="${query}"][data-shadow-results-scope="${scope}"]`)
      await results.waitFor({ timeout: 30_000 })
      return results
    }
    // this session never said it: its own history has nothing; the workspace has the first session's
    expect(await (await search('session')).locator('[data-shadow-hit]').count()).toBe(0)
    const hits = (await search('workspace')).locator('[data-shadow-hit]')
    await hits.first().waitFor({ timeout: 30_000 })
    expect(new Set(await attributes(hits, 'data-shadow-hit-session'))).toEqual(new Set([sessionId]))
    const first = hits.first()
    await expect.poll(() => first.locator('[data-shadow-hit-other]').count()).toBe(1)
    const id = (await first.getAttribute('data-shadow-hit'))!
    await first.locator('button').first().click()
    const original = first.locator(`[data-shadow-original="${id}"]`)
    await original.waitFor({ timeout: 30_000 })
    expect(await original.textContent()).toBe(await storeText(id))
    expect(await original.textContent()).toContain('5433')
    await shot('panel-workspace-search.png')
    // a Standard session's messages never reach the shadow store, even with Shadow Context sessions
    // running before and after it in the same server
    const store = await ShadowStore.open(join(home, 'shadow-context', 'shadow.db'), { readOnly: true })
    const stored = (await store.sessions()).map(session => session.sessionId)
    await store.close()
    expect(basicId).toBeDefined()
    expect(stored).toContain(sessionId)
    expect(stored).not.toContain(basicId)
  })
})
