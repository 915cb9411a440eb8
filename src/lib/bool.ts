/**
 * Yes/no as Go's strconv.ParseBool reads it — `1 t T TRUE true True` and `0 f F FALSE false
 * False`, nothing else — the one set of spellings the project takes for a boolean: the API's
 * `pagination.reverse` / `pagination.count_total` (src/http/params.ts, as rollytics reads them)
 * and every yes/no option of the command line and its INDEXER_API_* variables
 * (src/settings/command-line.ts, where any other spelling is refused).
 */
const GO_BOOL: Readonly<Record<string, boolean>> = {
  1: true,
  t: true,
  T: true,
  TRUE: true,
  true: true,
  True: true,
  0: false,
  f: false,
  F: false,
  FALSE: false,
  false: false,
  False: false,
};

/** The spellings, for a message. */
export const GO_BOOL_SPELLINGS = 'true or false (or 1, t, T, TRUE, True / 0, f, F, FALSE, False)';

/** The boolean `text` spells, or undefined when it is none of Go's spellings (`yes`, `maybe`, ''). */
export function parseGoBool(text: string): boolean | undefined {
  return Object.hasOwn(GO_BOOL, text) ? GO_BOOL[text] : undefined;
}
