import { resolveSettings } from './config-sources.js';
import { crawlCommandOf, CRAWL_USAGE } from './options.js';
import { settingsTable } from './config-sources.js';
import { SETTINGS } from './settings.js';

/**
 * `crawlstream config [crawl options]`: the effective value of every setting and where it came
 * from (default, file, env or flag), after the same checks `crawl` makes. `--markdown` prints the
 * README's option table instead.
 */
export function runConfig(args: string[], out: (line: string) => void, env: NodeJS.ProcessEnv = process.env): void {
  if (args.includes('--markdown')) {
    out(settingsTable());
    return;
  }
  const resolved = resolveSettings(args, env, CRAWL_USAGE.replace('crawlstream crawl', 'crawlstream config'));
  crawlCommandOf(resolved); // the same validation as crawl: a bad value fails here too
  const width = Math.max(...SETTINGS.map((s) => s.name.length));
  for (const s of SETTINGS) {
    const r = resolved.values.get(s.name);
    const value = r === undefined ? '(unset)' : Array.isArray(r.value) ? r.value.join(',') : String(r.value);
    out(`${s.name.padEnd(width)}  ${value.padEnd(24)}  ${r?.source ?? ''}`.trimEnd());
  }
}
