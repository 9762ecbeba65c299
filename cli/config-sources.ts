import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { InvalidOptionError } from '../core/errors.js';
import { parseSiteFlag, parseSiteOverride, type SiteRule } from '../processors/common/site-overrides.js';
import { describeBounds, withinBounds } from '../processors/common/config-bounds.js';
import {
  commandsOf,
  envName,
  SETTING_COMMANDS,
  SETTINGS,
  settingsOf,
  type Setting,
  type SettingCommand,
} from './settings.js';

export type SettingValue = string | number | boolean | string[];

/** A setting's effective value and where it came from. */
export interface Resolved {
  readonly value: SettingValue;
  /** `default`, `file <path>`, `env CRAWLSTREAM_X` or `flag --x`. */
  readonly source: string;
}

/** One per-site override in force and where it came from (`file <path>`, `env CRAWLSTREAM_SITE`, `flag --site`). */
export interface ResolvedSite {
  readonly rule: SiteRule;
  readonly source: string;
}

export interface ResolvedSettings {
  /** Effective values by setting name; a setting with no default that nobody set is absent. */
  readonly values: ReadonlyMap<string, Resolved>;
  readonly positionals: readonly string[];
  /**
   * Per-site overrides (`sites:` in the file, then `--site` from the environment and flags), one
   * per key: an entry from a stronger source replaces the whole entry of the same key.
   */
  readonly sites: readonly ResolvedSite[];
}

const BY_NAME = new Map(SETTINGS.map((s) => [s.name, s]));

/** A command as the user types it: `replay reparse` for `reparse`. */
export function commandName(command: SettingCommand): string {
  return command === 'reparse' ? 'replay reparse' : command;
}

/** How `crawlstream` is typed before a command's options. */
export function commandLine(command: SettingCommand): string {
  return `crawlstream ${commandName(command)}`;
}

/** The precedence of a source (`Resolved.source`): default 0 < file 1 < env 2 < flag 3. */
export function sourceRank(source: string): number {
  return source.startsWith('flag') ? 3 : source.startsWith('env') ? 2 : source.startsWith('file') ? 1 : 0;
}

/**
 * The effective settings of a command: defaults < `--config FILE` (YAML) < environment
 * (`CRAWLSTREAM_<NAME>`) < flags. Every value is checked against its setting; an error names
 * the setting and the source it came from. Unknown flags and file keys that are no setting at all
 * are errors; a file key of another command's setting is ignored (one file may configure several
 * commands), as are unknown environment variables (the environment is shared).
 */
export function resolveSettings(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  usage: string,
  command: SettingCommand = 'crawl',
): ResolvedSettings {
  const SETTINGS = settingsOf(command);
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args],
      allowPositionals: true,
      options: Object.fromEntries(
        SETTINGS.map((s) => [
          s.name,
          s.kind === 'bool' ? { type: 'boolean' as const } : { type: 'string' as const, multiple: s.kind === 'list' },
        ]),
      ),
    });
  } catch (err) {
    throw new InvalidOptionError(`${parseArgsProblem(err as NodeJS.ErrnoException)}\n${usage}`);
  }
  const values = new Map<string, Resolved>();
  for (const s of SETTINGS)
    if (s.default !== undefined) values.set(s.name, { value: convert(s, s.default, 'default'), source: 'default' });

  const flags = parsed.values as Record<string, string | boolean | string[] | undefined>;
  const configFile = (flags['config'] as string | undefined) ?? env[envName({ name: 'config' })];
  const sites = new Map<string, ResolvedSite>();
  const takesSites = SETTINGS.some((s) => s.name === 'site');
  if (configFile !== undefined) {
    for (const [key, raw] of Object.entries(readConfigFile(configFile))) {
      if (key === 'sites') {
        if (takesSites) for (const r of sitesFromYaml(raw, configFile)) sites.set(r.rule.key, r);
        continue;
      }
      const s = BY_NAME.get(key);
      if (!s || s.name === 'config')
        throw new InvalidOptionError(
          `${configFile}: unknown setting ${JSON.stringify(key)} (see ${commandLine(command)} --help)`,
        );
      if (!SETTINGS.includes(s)) continue;
      const source = `file ${configFile}`;
      values.set(key, { value: fromYaml(s, raw, source), source });
    }
  }
  for (const s of SETTINGS) {
    const raw = env[envName(s)];
    if (raw === undefined || raw === '') continue;
    const source = `env ${envName(s)}`;
    values.set(s.name, {
      value:
        s.kind === 'list'
          ? raw
              .split(',')
              .map((v) => v.trim())
              .filter(Boolean)
          : convert(s, raw, source),
      source,
    });
  }
  for (const s of SETTINGS) {
    const raw = flags[s.name];
    if (raw === undefined) continue;
    const source = `flag --${s.name}`;
    values.set(s.name, {
      value: typeof raw === 'boolean' || Array.isArray(raw) ? raw : convert(s, raw, source),
      source,
    });
  }
  const siteFlags = values.get('site');
  if (siteFlags !== undefined)
    for (const text of siteFlags.value as string[]) {
      const where = siteFlags.source === 'flag --site' ? '--site' : siteFlags.source.replace(/^env /, '');
      const rule = parseSiteFlag(text, where);
      sites.set(rule.key, { rule, source: siteFlags.source });
    }
  return { values, positionals: parsed.positionals, sites: [...sites.values()] };
}

/** The `sites:` map of a config file, each entry checked (errors name the file and the key). */
function sitesFromYaml(raw: unknown, file: string): ResolvedSite[] {
  if (raw === null || raw === undefined) return [];
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new InvalidOptionError(
      `${file}: sites must be a mapping of site keys (example.org, *.example.org, a SURT prefix) to overrides`,
    );
  return Object.entries(raw as Record<string, unknown>).map(([key, value]) => ({
    rule: parseSiteOverride(key, value, file),
    source: `file ${file}`,
  }));
}

/**
 * One line naming what `node:util` parseArgs refused: `unknown option --x`, or its own first
 * sentence (`Option '--data <value>' argument missing`).
 */
function parseArgsProblem(err: NodeJS.ErrnoException): string {
  const message = err.message.split('\n')[0]!;
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const option = /'([^']+)'/.exec(message)?.[1];
    if (option !== undefined) return `unknown option ${option}`;
  }
  return message.replace(/\. .*$/, '');
}

/**
 * The settings `command` cannot start without (`Setting.requiredBy`) that nobody set; throws
 * InvalidOptionError naming the first, e.g. `--data DIR is required`.
 */
export function requireSettings(resolved: ResolvedSettings, command: SettingCommand, usage = ''): void {
  for (const s of settingsOf(command))
    if (s.requiredBy?.includes(command) && resolved.values.get(s.name) === undefined)
      throw new InvalidOptionError(`--${s.name}${s.arg ? ` ${s.arg}` : ''} is required${usage ? `\n${usage}` : ''}`);
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new InvalidOptionError(
      `--config ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    throw new InvalidOptionError(`--config ${file} is not valid YAML: ${(err as Error).message}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc))
    throw new InvalidOptionError(`--config ${file} must be a mapping of setting names to values`);
  return doc as Record<string, unknown>;
}

function fromYaml(s: Setting, raw: unknown, source: string): SettingValue {
  if (s.kind === 'list') {
    const list = Array.isArray(raw) ? raw : [raw];
    if (!list.every((v) => typeof v === 'string'))
      throw new InvalidOptionError(`${s.name} must be a list of strings (from ${source}), got ${JSON.stringify(raw)}`);
    return list as string[];
  }
  if (s.kind === 'bool') {
    if (typeof raw !== 'boolean')
      throw new InvalidOptionError(`${s.name} must be true or false (from ${source}), got ${JSON.stringify(raw)}`);
    return raw;
  }
  return convert(s, typeof raw === 'string' ? raw : JSON.stringify(raw), source);
}

/** A setting's text as its value; throws InvalidOptionError naming the setting and the source. */
function convert(s: Setting, raw: string, source: string): SettingValue {
  const fail = (what: string): never => {
    throw new InvalidOptionError(`--${s.name} must be ${what}, got ${JSON.stringify(raw)} (from ${source})`);
  };
  switch (s.kind) {
    case 'bool':
      if (/^(true|1|yes)$/i.test(raw)) return true;
      if (/^(false|0|no)$/i.test(raw)) return false;
      return fail('true or false');
    case 'list':
      return [raw];
    case 'string':
      if (s.values && !s.values.includes(raw)) return fail(`one of ${s.values.join(', ')}`);
      if (s.pattern && !s.pattern.test.test(raw)) return fail(s.pattern.what);
      return raw;
    case 'int':
    case 'number': {
      // no setting is negative unless its min says so (-1: forever)
      const bounds = {
        min: s.min ?? 0,
        ...(s.max !== undefined ? { max: s.max } : {}),
        whole: s.kind === 'int',
        open: s.open === true,
      };
      const n = Number(raw);
      const ok = s.kind === 'int' ? /^-?\d+$/.test(raw.trim()) : raw.trim() !== '';
      if (!ok || !withinBounds(n, bounds)) return fail(describeBounds(bounds));
      return n;
    }
  }
}

/** `--help` text of the settings, generated from the schema. */
export function settingsHelp(command: SettingCommand = 'crawl'): string {
  return settingsOf(command)
    .map((s) => {
      const flag = `--${s.name}${s.arg ? ` ${s.arg}` : ''}`;
      const dflt = s.default !== undefined && s.kind !== 'bool' ? ` (default ${s.default})` : '';
      return `  ${flag.padEnd(26)} ${s.help}${dflt}`;
    })
    .join('\n');
}

/** The README's option table, generated from the schema. */
export function settingsTable(): string {
  const rows = SETTINGS.map((s) => {
    const flag = `\`--${s.name}${s.arg ? ` ${s.arg}` : ''}\``;
    const dflt = s.default !== undefined ? `\`${s.default}\`` : '—';
    const commands = s.commands === SETTING_COMMANDS ? 'all' : commandsOf(s).map(commandName).join(', ');
    return `| ${flag} | \`${envName(s)}\` | ${dflt} | ${commands} | ${s.help.replace(/\|/g, '\\|')} |`;
  });
  return ['| option | environment | default | commands | meaning |', '|---|---|---|---|---|', ...rows].join('\n');
}
