import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { InvalidOptionError } from '../core/errors.js';
import { readTopic } from '../runtime/engines/embedded/topic-reader.js';

const EXPORTABLE = new Set(['page-records', 'links', 'fetch-results']);

export const EXPORT_USAGE = 'usage: crawlstream export page-records --data DIR   (prints one JSON object per line)';

/** Prints a topic of an embedded data dir as JSON lines; bytes are written as hex strings. */
export async function runExport(args: string[], out: (line: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { data: { type: 'string' } } });
  const topic = positionals[0];
  if (!topic || !EXPORTABLE.has(topic))
    throw new InvalidOptionError(
      `export needs one of ${[...EXPORTABLE].join(', ')}, got ${JSON.stringify(topic ?? '')}\n${EXPORT_USAGE}`,
    );
  if (!values.data) throw new InvalidOptionError(`--data DIR is required\n${EXPORT_USAGE}`);
  if (!existsSync(values.data)) throw new InvalidOptionError(`--data ${values.data} does not exist`);
  return readTopic(values.data, topic, (r) =>
    out(JSON.stringify(r.value, (_k, v: unknown) => (isBufferJson(v) ? Buffer.from(v.data).toString('hex') : v))),
  );
}

function isBufferJson(v: unknown): v is { type: 'Buffer'; data: number[] } {
  return (
    typeof v === 'object' &&
    v !== null &&
    (v as { type?: unknown }).type === 'Buffer' &&
    Array.isArray((v as { data?: unknown }).data)
  );
}
