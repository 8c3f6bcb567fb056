/**
 * A size-bounded map with approximate LRU eviction in O(1): entries live in a "young" and an "old" generation;
 * when the young one is full it becomes the old one and the previous old one is dropped. A hit in the old
 * generation is promoted, so entries in use survive; at most `2 × capacity` entries are held.
 */
export class BoundedCache<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();

  /** @param capacity entries per generation; 0 disables caching. */
  constructor(readonly capacity: number) {}

  /** The cached value, or `undefined`. */
  get(key: K): V | undefined {
    const hit = this.young.get(key);
    if (hit !== undefined) return hit;
    const aged = this.old.get(key);
    if (aged !== undefined) this.set(key, aged);
    return aged;
  }

  /** Stores a value, rotating generations when the young one is full. */
  set(key: K, value: V): void {
    if (this.capacity <= 0) return;
    if (this.young.size >= this.capacity) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }

  /** Number of entries currently held (both generations; an entry may be counted twice). */
  get size(): number {
    return this.young.size + this.old.size;
  }

  /** Drops every entry. */
  clear(): void {
    this.young.clear();
    this.old.clear();
  }
}
