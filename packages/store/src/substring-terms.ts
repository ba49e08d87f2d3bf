/**
 * Substring terms as every backend looks for them: which of an OR or an AND of them decide it.
 */

/**
 * The terms that decide an OR or an AND of substring terms: a text holding a term holds every
 * term inside it, so of an OR the terms holding another are dropped, of an AND the terms another
 * holds (48 nested terms of a query check as one: each was a pass over every candidate's text).
 */
export function essentialTerms(terms: readonly string[], operator: 'and' | 'or'): string[] {
  const distinct = [...new Set(terms)]
  if (distinct.length < 2) return distinct
  return distinct.filter(term => !distinct.some(other => other !== term && (operator === 'or' ? term.includes(other) : other.includes(term))))
}
