/**
 * Option names a plugin's schema does not know are refused. schemastery keeps unknown keys as they
 * are, so a misspelt option (`treshold`, `retention.maxAge`) silently left the default in place.
 */
export function refuseUnknownKeys(label: string, config: unknown, schema: { readonly dict?: Readonly<Record<string, unknown>> }, extra: readonly string[] = []): void {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) return
  const known = [...Object.keys(schema.dict ?? {}), ...extra]
  const unknown = Object.keys(config).filter(key => !known.includes(key))
  if (unknown.length === 0) return
  const named = unknown.slice(0, 5).map(key => JSON.stringify(key.slice(0, 40))).join(', ')
  throw new TypeError(`${label}: unknown option${unknown.length > 1 ? 's' : ''} ${named}${unknown.length > 5 ? ` and ${unknown.length - 5} more` : ''} (known: ${known.join(', ')})`)
}
