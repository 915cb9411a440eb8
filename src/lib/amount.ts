/**
 * Rich-list amounts are integers of any size. They are stored with a text key that sorts like
 * the number: a sign byte ('-' < '0'), then the magnitude zero-padded to a fixed width; negative
 * magnitudes are nine's-complemented so that larger debts sort first.
 */
const AMOUNT_DIGITS = 96;
const AMOUNT_RE = /^-?[0-9]+$/;

export function isAmount(text: string): boolean {
  return AMOUNT_RE.test(text) && text.replace(/^-?0*/, '').length <= AMOUNT_DIGITS;
}

/** Canonical decimal text: no leading zeros, no "-0". */
function canonicalAmount(text: string): string {
  const neg = text.startsWith('-');
  const digits = text.replace(/^-/, '').replace(/^0+/, '') || '0';
  return neg && digits !== '0' ? `-${digits}` : digits;
}

export function amountKey(text: string): string {
  const c = canonicalAmount(text);
  if (!c.startsWith('-')) return '0' + c.padStart(AMOUNT_DIGITS, '0');
  const mag = c.slice(1).padStart(AMOUNT_DIGITS, '0');
  let out = '-';
  for (const ch of mag) out += String(9 - Number(ch));
  return out;
}

/** Inverse of amountKey. */
export function amountFromKey(key: string): string {
  if (key.startsWith('0')) return key.slice(1).replace(/^0+/, '') || '0';
  let mag = '';
  for (const ch of key.slice(1)) mag += String(9 - Number(ch));
  return '-' + (mag.replace(/^0+/, '') || '0');
}
