import type { CrawlConfig } from '../processors/common/crawl-config.js';

/** How a setting's text becomes a value. */
export type SettingKind = 'int' | 'number' | 'string' | 'bool' | 'list';

/**
 * One setting of the CLI: its flag, file key and environment variable all come from `name`; every
 * command's `--help`, the README's option table and `crawlstream config` are generated from the
 * list (cli/settings.ts), so a setting is described in one place and resolved alike everywhere
 * (default < --config file < CRAWLSTREAM_* environment < flag).
 */
export interface Setting {
  /** `--name` on the command line, `name:` in the --config file, CRAWLSTREAM_NAME in the environment. */
  readonly name: string;
  readonly kind: SettingKind;
  /** The unit of a number: ms, s, bytes, or a plain count. */
  readonly unit?: 'ms' | 's' | 'bytes' | 'count' | '%';
  /** Value placeholder in the help text (`N`, `MS`, `FILE`). */
  readonly arg?: string;
  /** The default as shown; undefined: none (absent unless given). */
  readonly default?: string;
  readonly help: string;
  /** The CrawlConfig field it sets, when it is one. */
  readonly config?: keyof CrawlConfig;
  /** Smallest and largest value of a number (of a CrawlConfig field's setting: that field's, cli/settings.ts). */
  readonly min?: number;
  readonly max?: number;
  /** min and max themselves are refused (an open interval). */
  readonly open?: boolean;
  /** The CLI's default differs from the CrawlConfig field's and is described in `help` (--threads). */
  readonly ownDefault?: boolean;
  /** The values an enumerated string may take. */
  readonly values?: readonly string[];
  /** The form a free string must have, and how a refusal describes it ("lower-case letters, …"). */
  readonly pattern?: { readonly test: RegExp; readonly what: string };
  /** The commands that take it; undefined: `crawl` and `run` (a crawl setting). `config` shows them all. */
  readonly commands?: readonly SettingCommand[];
  /** The commands that refuse to start without it (`config` marks it when unset). */
  readonly requiredBy?: readonly SettingCommand[];
  /** The config field holds the value times this (seconds given, milliseconds kept: 1000). */
  readonly scale?: number;
}

/**
 * The commands that take settings (`replay` is verify, rebuild and dump; `reparse` is `replay
 * reparse`). A new command that takes settings is added here and to the settings it takes.
 */
export const SETTING_COMMANDS = [
  'crawl',
  'run',
  'config',
  'demo',
  'export',
  'control',
  'topics',
  'inject',
  'replay',
  'reparse',
  'status',
] as const;
export type SettingCommand = (typeof SETTING_COMMANDS)[number];
