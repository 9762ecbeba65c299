import { commandLine, settingsHelp } from './config-sources.js';
import type { SettingCommand } from './settings.js';

/** Where every command's options may come from, and which source wins. */
export const SOURCES_NOTE = `Every option can also be set in a --config YAML file (key = option name) or as CRAWLSTREAM_<NAME>
(e.g. CRAWLSTREAM_MIN_DELAY); flags win over the environment, which wins over the file.`;

/**
 * A command's `--help`: its synopsis lines (each after `crawlstream`), what it does, then its
 * options generated from the settings schema (cli/settings.ts), so the usage cannot list an option
 * the command does not take nor miss one it does.
 */
export function commandUsage(command: SettingCommand, synopses: readonly string[], about = ''): string {
  // a line that starts with blanks continues the one before it
  const lines = synopses.map((s, i) =>
    s.startsWith(' ') ? `       ${s}` : `${i === 0 ? 'usage:' : '      '} ${commandLine(command)} ${s}`.trimEnd(),
  );
  return [lines.join('\n'), ...(about ? [about] : []), SOURCES_NOTE, settingsHelp(command)].join('\n\n');
}
