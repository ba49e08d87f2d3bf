/**
 * doctor's check of our rows' options in dsh's composed config. `dsh --dump-config` composes the
 * profile without building a row, so a misspelt option (`retention.maxAge` for `maxAgeDays`) passed
 * doctor and failed only when a session started; the rows' own checks run on what it printed.
 */
import { isMap, isSeq, parseDocument, type Node } from 'yaml'
import { CHECKED_ROWS, rowOptionsProblem } from 'dsh-shadow-context'
import type { Check } from './setup.ts'

const CORE_TAGS = new Set(['str', 'int', 'float', 'bool', 'null', 'map', 'seq', 'binary', 'timestamp', 'set', 'omap', 'pairs'].map(name => `tag:yaml.org,2002:${name}`))

/** Whether a node holds a value YAML's core schema does not read (dsh's `!!js` expressions). */
function hasForeignTag(node: unknown): boolean {
  if (node === null || typeof node !== 'object') return false
  const tag = (node as Node).tag
  if (tag !== undefined && !CORE_TAGS.has(tag)) return true
  if (isMap(node)) return node.items.some(pair => hasForeignTag(pair.key) || hasForeignTag(pair.value))
  if (isSeq(node)) return node.items.some(hasForeignTag)
  return false
}

interface Row {
  readonly id: string
  readonly name: string
  readonly config: unknown
  readonly foreign: boolean
}

/** Every enabled row of ours, wherever it sits in the tree (a row list may nest in a group's config). */
function ourRows(node: unknown, found: Row[] = []): Row[] {
  if (isSeq(node)) for (const item of node.items) ourRows(item, found)
  else if (isMap(node)) {
    const name = node.get('name')
    if (typeof name === 'string' && CHECKED_ROWS.includes(name) && node.get('disabled') !== true) {
      const config = node.get('config', true)
      found.push({ id: String(node.get('id') ?? name), name, config: config === undefined ? {} : (config as Node).toJSON(), foreign: hasForeignTag(config) })
    }
    for (const item of node.items) ourRows(item.value, found)
  }
  return found
}

/** One check line: each of our rows' options as its constructor would take them. */
export function rowOptionsCheck(profile: string, dump: string, patch: string): Check {
  const check = `${profile}: row options`
  const doc = parseDocument(dump, { logLevel: 'silent' })
  if (doc.errors.length > 0) return { check, ok: true, detail: `not checked: dsh's composed config is not YAML this check reads (${doc.errors[0]!.message.split('\n')[0]})` }
  const rows = ourRows(doc.contents)
  const problems = rows.filter(row => !row.foreign).flatMap(row => {
    const problem = rowOptionsProblem(row.name, row.config)
    return problem === undefined ? [] : [`row ${row.id} (${row.name}): ${problem}`]
  })
  if (problems.length > 0) return { check, ok: false, detail: problems.join('; '), fix: `correct the option in the row's config in ${patch} (the README's config table names each option)` }
  const unchecked = rows.filter(row => row.foreign).map(row => row.id)
  return { check, ok: true, detail: `${rows.length - unchecked.length} row(s) of ours take their options${unchecked.length === 0 ? '' : `; not checked (a !!js value): ${unchecked.join(', ')}`}` }
}
