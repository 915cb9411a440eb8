/** Rich-list holder (reference §4.7): account `0x` hex on EVM, bech32 elsewhere; amount a string. */
export function holderJson(account: string, amount: string): string {
  return '{"account":' + JSON.stringify(account) + ',"amount":"' + amount + '"}';
}
