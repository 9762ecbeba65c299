import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

let cached: { brokers: string; registry: string } | undefined;

/**
 * The real broker and registry of the integration tests. CI (.ci/run) starts them and exports
 * CRAWLSTREAM_BROKERS and CRAWLSTREAM_REGISTRY; with CI=true their absence is a failure. Locally,
 * without those variables, the scripts start them here (scripts/kafka/start.sh) once per file.
 */
export function kafkaInfra(): { brokers: string; registry: string } {
  if (cached) return cached;
  const brokers = process.env['CRAWLSTREAM_BROKERS'];
  const registry = process.env['CRAWLSTREAM_REGISTRY'];
  if (brokers && registry) return (cached = { brokers, registry });
  if (process.env['CI'] === 'true') throw new Error('CRAWLSTREAM_BROKERS and CRAWLSTREAM_REGISTRY must be set in CI (.ci/run starts the broker and registry)');
  const out = execFileSync('bash', [`${ROOT}scripts/kafka/start.sh`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const vars = Object.fromEntries(out.split('\n').filter((l) => l.includes('=')).map((l) => l.split('=', 2) as [string, string]));
  process.env['CRAWLSTREAM_BROKERS'] = vars['CRAWLSTREAM_BROKERS'];
  process.env['CRAWLSTREAM_REGISTRY'] = vars['CRAWLSTREAM_REGISTRY'];
  return (cached = { brokers: vars['CRAWLSTREAM_BROKERS']!, registry: vars['CRAWLSTREAM_REGISTRY']! });
}
