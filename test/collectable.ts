import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/**
 * How many of `refs` still point at a live object after full garbage collections: what something
 * under test keeps alive. A WeakRef holds its target until the current job ends, so the
 * collections run on a later turn of the event loop.
 */
export async function survivors(refs: readonly WeakRef<object>[]): Promise<number> {
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
  return refs.filter((r) => r.deref() !== undefined).length;
}
