import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { InvalidOptionError } from '../core/errors.js';
import { envName, SETTINGS, settingsOf, type Setting, type SettingCommand } from './settings.js';

export type SettingValue = string | number | boolean | string[];

/** A setting's effective value and where it came from. */
export interface Resolved {
  readonly value: SettingValue;
  /** `default`, `file <path>`, `env CRAWLSTREAM_X` or `flag --x`. */
  readonly source: string;
}

export interface ResolvedSettings {
  /** Effective values by setting name; a setting with no default that nobody set is absent. */
  readonly values: ReadonlyMap<string, Resolved>;
  readonly positionals: readonly string[];
}

const BY_NAME = new Map(SETTINGS.map((s) => [s.name, s]));

/**
 * The effective settings of a command: defaults < `--config FILE` (YAML) < environment
 * (`CRAWLSTREAM_<NAME>`) < flags. Every value is checked against its setting; an error names
 * the setting and the source it came from. Unknown flags and unknown file keys are errors;
 * unknown environment variables are ignored (the environment is shared).
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
    throw new InvalidOptionError(`${(err as Error).message}\n${usage}`);
  }
  const values = new Map<string, Resolved>();
  for (const s of SETTINGS)
    if (s.default !== undefined) values.set(s.name, { value: convert(s, s.default, 'default'), source: 'default' });

  const flags = parsed.values as Record<string, string | boolean | string[] | undefined>;
  const configFile = (flags['config'] as string | undefined) ?? env[envName({ name: 'config' })];
  if (configFile !== undefined) {
    for (const [key, raw] of Object.entries(readConfigFile(configFile))) {
      const s = BY_NAME.get(key);
      if (!s || s.name === 'config' || !SETTINGS.includes(s))
        throw new InvalidOptionError(
          `${configFile}: unknown setting ${JSON.stringify(key)} (see crawlstream crawl --help)`,
        );
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
  return { values, positionals: parsed.positionals };
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
      const n = Number(raw);
      const ok =
        s.kind === 'int'
          ? /^\d+$/.test(raw.trim()) && Number.isSafeInteger(n)
          : raw.trim() !== '' && Number.isFinite(n);
      const range = s.max !== undefined ? `from ${s.min ?? 0} to ${s.max}` : `of at least ${s.min ?? 0}`;
      const what = `${s.kind === 'int' ? 'a whole number' : 'a number'} ${range}`;
      if (!ok || (s.min !== undefined && n < s.min) || (s.max !== undefined && n > s.max) || n < 0) return fail(what);
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
    return `| ${flag} | \`${envName(s)}\` | ${dflt} | ${s.help.replace(/\|/g, '\\|')} |`;
  });
  return ['| option | environment | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}
