/**
 * A bounded memo for the import's repeated conversions (the same accounts and signer keys come
 * back in tx after tx): two generations of at most `size` entries; a hit in the old generation
 * is promoted, and when the new one is full the old one is dropped. Memory stays below 2 × size
 * entries whatever the chain size, while hot keys stay cached (an LRU without per-hit cost).
 */
export class BoundedCache<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();

  constructor(private readonly size: number) {}

  get(key: string): V | undefined {
    const v = this.young.get(key);
    if (v !== undefined) return v;
    const o = this.old.get(key);
    if (o !== undefined) this.set(key, o);
    return o;
  }

  set(key: string, value: V): void {
    if (this.young.size >= this.size) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }
}
