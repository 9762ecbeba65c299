import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { startCli, type Exited } from '../e2e/harness.js';

/** One `crawlstream run` process of a multi-instance Kafka test, restartable under its name. */
export interface Instance {
  readonly name: string;
  readonly role: string;
  readonly dataDir: string;
  child: ReturnType<typeof startCli>['child'];
  exited: Promise<Exited>;
  /** Where its /metrics, /healthz and /readyz answer, once it has said so. */
  ops?: string;
  /** What its current life wrote to stderr so far (the last 64 KiB). */
  stderr: () => string;
}

/**
 * Starts `run --role ROLE --data <dir>/<name> ...common` and keeps it in `instances`; launching a
 * name again (after a kill) restarts it on the same data dir and updates its entry in place.
 * CRAWLSTREAM_TEST_LOGS=<dir> keeps every instance's whole output there, for a failure's post-mortem.
 */
export function launchInstance(
  instances: Instance[],
  dir: string,
  name: string,
  role: string,
  common: readonly string[],
  began: number,
): Instance {
  const dataDir = join(dir, name);
  const started = startCli(['run', '--role', role, '--data', dataDir, ...common]);
  let err = '';
  const stderr = (): string => err;
  const existing = instances.find((i) => i.name === name);
  const instance: Instance = existing
    ? Object.assign(existing, { child: started.child, exited: started.exited, ops: undefined, stderr })
    : { name, role, dataDir, ...started, stderr };
  if (!existing) instances.push(instance);
  const keep = process.env['CRAWLSTREAM_TEST_LOGS'];
  if (keep) {
    const file = createWriteStream(join(keep, `${name}-${Date.now() - began}.log`));
    started.child.stdout!.pipe(file);
    started.child.stderr!.pipe(file);
  }
  started.child.stderr!.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-65_536);
    instance.ops ??= /\/readyz on http:\/\/(\S+)/.exec(err)?.[1];
  });
  return instance;
}
