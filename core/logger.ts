import { InvalidOptionError } from './errors.js';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Fields of one line: small, flat values (a task id, a topic, a count), never a page body. */
export type LogFields = Readonly<Record<string, string | number | boolean | null>>;

/**
 * A levelled logger. Engines hand each processor one through its context, bound to the task, so
 * every line says which task wrote it. Lines below the level cost one comparison.
 */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger whose every line also carries `bindings` (e.g. `{ task: '0_3' }`). */
  child(bindings: LogFields): Logger;
}

export interface LoggerOptions {
  readonly level?: LogLevel;
  /** `text` for terminals, `json` (one object per line) for log pipelines. */
  readonly format?: LogFormat;
  /** Where lines go; default standard error, so standard output stays the command's own. */
  readonly write?: (line: string) => void;
  /** A name for the lines' source (`engine`, `cli`). */
  readonly name?: string;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** The one place that decides level and format. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const min = RANK[options.level ?? 'info'];
  const json = options.format === 'json';
  const make = (bindings: LogFields): Logger => {
    const emit = (level: LogLevel, message: string, fields?: LogFields): void => {
      if (RANK[level] < min) return;
      const time = new Date().toISOString();
      if (json) {
        write(JSON.stringify({ time, level, msg: message, ...bindings, ...fields }));
        return;
      }
      const all = { ...bindings, ...fields };
      const tags = Object.entries(all)
        .map(([k, v]) => `${k}=${typeof v === 'string' && /\s/.test(v) ? JSON.stringify(v) : String(v)}`)
        .join(' ');
      write(`${time} ${level.toUpperCase().padEnd(5)} ${message}${tags ? `  ${tags}` : ''}`);
    };
    return {
      debug: (m, f) => emit('debug', m, f),
      info: (m, f) => emit('info', m, f),
      warn: (m, f) => emit('warn', m, f),
      error: (m, f) => emit('error', m, f),
      child: (more) => make({ ...bindings, ...more }),
    };
  };
  return make(options.name !== undefined ? { logger: options.name } : {});
}

/** A logger that writes nothing (tests, benches). */
export const silentLogger: Logger = createLogger({ level: 'error', write: () => undefined });

/** Checks `--log-level` / `--log-format` values; the error names the option and the value. */
export function parseLogOptions(level: string | undefined, format: string | undefined): LoggerOptions {
  if (level !== undefined && !(LOG_LEVELS as readonly string[]).includes(level))
    throw new InvalidOptionError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
  if (format !== undefined && !(LOG_FORMATS as readonly string[]).includes(format))
    throw new InvalidOptionError(
      `--log-format must be one of ${LOG_FORMATS.join(', ')}, got ${JSON.stringify(format)}`,
    );
  return { ...(level ? { level: level as LogLevel } : {}), ...(format ? { format: format as LogFormat } : {}) };
}
