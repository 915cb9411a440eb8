/**
 * rollytics' by_name normalization (docs/api-contract.md#collection-name-search): drop every character that is not a
 * Unicode letter, mark or number, then lower-case.
 */
export function normalizeName(text: string): string {
  return text.replace(/[^\p{L}\p{M}\p{N}]/gu, '').toLowerCase();
}
