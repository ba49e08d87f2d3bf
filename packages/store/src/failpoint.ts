/**
 * Failpoints for the crash harness (shared by the store and Shadow Context's plugins): named places where `bench:crash` may kill the process on
 * purpose (SIGKILL, no cleanup), to prove that no such moment loses or duplicates a message or
 * elides one the store does not hold. Inert unless DSH_SHADOW_FAILPOINT is set, e.g.
 * `engine.before-replace:3` kills at the third time that point is reached.
 */
const spec = process.env['DSH_SHADOW_FAILPOINT']
const [target, nth] = spec === undefined ? [undefined, 0] : [spec.split(':')[0], Number(spec.split(':')[1] ?? 1)]
let hits = 0

export type FailpointName =
  | 'store.mid-append'
  | 'capture.before-write'
  | 'capture.after-write'
  | 'engine.after-confirm'
  | 'engine.before-replace'
  | 'engine.after-replace'
  | 'recall.during-read'

export function failpoint(name: FailpointName): void {
  if (target !== name) return
  hits += 1
  if (hits === nth) process.kill(process.pid, 'SIGKILL')
}
