import { existsSync } from 'node:fs';
import { InvalidOptionError } from '../core/errors.js';
import { readTopic } from '../runtime/engines/embedded/topic-reader.js';
import { requireSettings, resolveSettings } from './config-sources.js';
import { commandUsage } from './usage.js';

const EXPORTABLE = new Set(['page-records', 'page-content', 'links', 'fetch-results']);

export const EXPORT_USAGE = commandUsage(
  'export',
  [`${[...EXPORTABLE].join('|')} --data DIR`],
  `  prints a topic of an embedded crawl's data dir, one JSON object a line (bytes as hex strings);
  page-records are the crawl's output, page-content what its HTML pages say`,
);

/** Prints a topic of an embedded data dir as JSON lines; bytes are written as hex strings. */
export async function runExport(
  args: string[],
  out: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const resolved = resolveSettings(args, env, EXPORT_USAGE, 'export');
  const [topic, extra] = resolved.positionals;
  if (!topic || !EXPORTABLE.has(topic))
    throw new InvalidOptionError(
      `export needs one of ${[...EXPORTABLE].join(', ')}, got ${JSON.stringify(topic ?? '')}\n${EXPORT_USAGE}`,
    );
  if (extra !== undefined) throw new InvalidOptionError(`export takes one topic, got also ${JSON.stringify(extra)}`);
  requireSettings(resolved, 'export', EXPORT_USAGE);
  const data = resolved.values.get('data')!.value as string;
  if (!existsSync(data)) throw new InvalidOptionError(`--data ${data} does not exist`);
  return readTopic(data, topic, (r) =>
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
