/**
 * RedactionRegistry: the redaction policies of this process's captures (and of the stores the web
 * reader opened), for free text read outside a capture's own composition. In a web profile the
 * capture runs inside its agent preset while the `shadowContext` projection runs on the host; the
 * projection has no capture of its own, so it applies every policy registered here. Over-redacting
 * a session whose own capture does not redact is the safe mistake.
 */
import type { Redactor } from '@dsh-shadow/store'

// Process-wide by a global symbol, not by module identity: the host's rows and a preset's rows may
// load two copies of this module (two installs, or a loader that imports the package apart).
const KEY = Symbol.for('dsh-shadow-context.redaction-registry')
const holder = globalThis as { [KEY]?: Map<Redactor, number> }
const registered: Map<Redactor, number> = holder[KEY] ??= new Map()

export const RedactionRegistry = {
  /** Register a policy; the returned function takes it back out. */
  add(redactor: Redactor): () => void {
    registered.set(redactor, (registered.get(redactor) ?? 0) + 1)
    let removed = false
    return () => {
      if (removed) return
      removed = true
      const count = (registered.get(redactor) ?? 1) - 1
      if (count <= 0) registered.delete(redactor)
      else registered.set(redactor, count)
    }
  },
  /** `text` with every registered policy applied (unchanged when none is). */
  text(text: string): string {
    let out = text
    for (const redactor of registered.keys()) out = redactor.text(out)
    return out
  },
}
