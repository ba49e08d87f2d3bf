// Resolve hook for `bench:agent --model deepseek`. The bench runs with `--conditions=source` so our
// workspace packages load from their TypeScript sources; a third-party package that also exports a
// "source" condition (eventsource-parser, under dsh's DeepSeek adapter) would then resolve to
// TypeScript that Node does not strip inside node_modules. Imports made from node_modules resolve
// without that condition.
export async function resolve(specifier, context, next) {
  if (context.parentURL !== undefined && context.parentURL.includes('/node_modules/')) {
    return next(specifier, { ...context, conditions: context.conditions.filter(condition => condition !== 'source') })
  }
  return next(specifier, context)
}
