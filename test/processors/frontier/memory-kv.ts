import type { KeyValueStore } from '../../../state/state-store.js';

/** A string-keyed store in RAM, ranges in key order (the keys under test are ASCII, so UTF-16 order is byte order). */
export function memoryKv<V>(
  name: string,
  map = new Map<string, V>(),
): KeyValueStore<string, V> & { map: Map<string, V> } {
  return {
    name,
    map,
    get: (k) => map.get(k),
    getMany: (ks) => ks.map((k) => map.get(k)),
    put: (k, v) => void map.set(k, v),
    delete: (k) => void map.delete(k),
    *range(gte: string, lt: string) {
      yield* [...map].filter(([k]) => k >= gte && k < lt).sort(([a], [b]) => (a < b ? -1 : 1));
    },
    flush() {},
    close() {},
  };
}
