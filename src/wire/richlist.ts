/** Rich-list holder (docs/api-contract.md#rich-list): account `0x` hex on EVM, bech32 elsewhere; amount a string. */
export function holderJson(account: string, amount: string): string {
  return '{"account":' + JSON.stringify(account) + ',"amount":"' + amount + '"}';
}
