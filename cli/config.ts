import { clusterSecurity } from './kafka-security-options.js';
import { commandName, resolveSettings, settingsTable } from './config-sources.js';
import { crawlSettingsOf } from './options.js';
import { SETTINGS } from './settings.js';
import { describeOverride } from '../processors/common/site-overrides.js';
import { commandUsage } from './usage.js';

export const CONFIG_USAGE = commandUsage(
  'config',
  ['[--config FILE] [any option] [--markdown]'],
  `  prints the effective value of every setting and where it came from (default, file, env or
  flag), after the checks the commands make; a setting nobody set shows "(unset)", and
  "(unset, required by …)" when those commands cannot start without it. --markdown prints the
  README's option table instead. Takes the options of every command.`,
);

/**
 * `crawlstream config [options]`: the effective value of every setting and where it came from
 * (default, file, env or flag), after the same checks `crawl` makes (the crawl settings, and the
 * Kafka security settings together); no setting is required to show them. `--markdown` prints
 * the README's option table instead.
 */
export function runConfig(args: string[], out: (line: string) => void, env: NodeJS.ProcessEnv = process.env): number {
  const resolved = resolveSettings(args, env, CONFIG_USAGE, 'config');
  if (resolved.values.get('markdown')?.value === true) {
    out(settingsTable());
    return 0;
  }
  crawlSettingsOf(resolved); // a bad value or combination fails here as it would in crawl
  clusterSecurity((name) => resolved.values.get(name)?.value as string | boolean | undefined, env);
  const width = Math.max(...SETTINGS.map((s) => s.name.length));
  for (const s of SETTINGS) {
    if (s.name === 'markdown') continue;
    if (s.name === 'site') {
      // one line per site key, each with its own source
      if (resolved.sites.length === 0) out(`${'site'.padEnd(width)}  (unset)`);
      for (const { rule, source } of resolved.sites)
        out(`${`site ${rule.key}`.padEnd(width)}  ${describeOverride(rule.override).padEnd(24)}  ${source}`);
      continue;
    }
    const r = resolved.values.get(s.name);
    const value =
      r !== undefined
        ? Array.isArray(r.value)
          ? r.value.join(',')
          : String(r.value)
        : s.requiredBy
          ? `(unset, required by ${s.requiredBy.map(commandName).join(', ')})`
          : '(unset)';
    out(`${s.name.padEnd(width)}  ${value.padEnd(24)}  ${r?.source ?? ''}`.trimEnd());
  }
  return 0;
}
