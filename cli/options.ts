import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { InvalidOptionError } from '../core/errors.js';
import { resolveSettings, type Resolved, type ResolvedSettings, type SettingValue } from './config-sources.js';
import { parseAcceptTypes } from '../processors/common/accept-types.js';
import { commandUsage } from './usage.js';
import { SETTINGS } from './settings.js';
import { parseLogOptions, type LoggerOptions } from '../core/logger.js';
import { availableParallelism } from 'node:os';
import { cgroupMemoryLimit } from './memory-limit.js';
import { validateCrawlConfig, type CrawlConfig } from '../processors/common/crawl-config.js';
import { parseWarcStoreUrl, type WarcStoreTarget } from '../processors/common/warc-store-target.js';
import { parseCidr } from '../processors/fetcher/address-guard.js';
import { parseResolveRule } from '../processors/fetcher/dns-resolver.js';
import { compileRule, parseExtension } from '../processors/common/url-filters.js';

export interface CrawlCommand {
  readonly seeds: string[];
  readonly dataDir: string;
  readonly untilIdle: boolean;
  readonly maxPages: number | undefined;
  readonly durationMs: number | undefined;
  readonly partitions: number;
  readonly quiet: boolean;
  readonly config: CrawlConfig;
  /** Level and format of log lines (standard error). */
  readonly log: LoggerOptions;
  /** Where /metrics, /healthz and /readyz are served, and `--stall-timeout`; undefined: not served. */
  readonly ops: { readonly port: number; readonly host: string; readonly stallMs: number } | undefined;
}

export const CRAWL_USAGE = commandUsage(
  'crawl',
  ['[URL...] [--seeds FILE] --data DIR [options]'],
  `  crawls on the embedded engine from the seeds (URL arguments, then --seeds) until stopped
  (SIGINT/SIGTERM), --until-idle, --max-pages or --duration`,
);

/** `--warc-store` and the S3 settings that go with it; null without it (they are then refused). */
function warcStoreOf(values: ResolvedSettings['values']): WarcStoreTarget | null {
  const get = (name: string): SettingValue | undefined => values.get(name)?.value;
  const url = get('warc-store') as string | undefined;
  if (url === undefined) {
    for (const name of ['s3-endpoint', 's3-region', 's3-path-style', 'warc-keep-local'])
      if (values.get(name) !== undefined && values.get(name)!.source !== 'default')
        throw new InvalidOptionError(`--${name} needs --warc-store`);
    return null;
  }
  return parseWarcStoreUrl(url, {
    endpoint: (get('s3-endpoint') as string | undefined) ?? null,
    region: get('s3-region') as string,
    pathStyle: get('s3-path-style') === true,
    keepLocal: get('warc-keep-local') === true,
  });
}

/** The PEM text of `--ca-file`, checked to hold at least one certificate that parses. */
function readCaFile(file: string): string {
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    throw new InvalidOptionError(
      `--ca-file ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  const certs = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (certs.length === 0) throw new InvalidOptionError(`--ca-file ${file} holds no PEM certificate`);
  for (const cert of certs) {
    try {
      new X509Certificate(cert);
    } catch (err) {
      throw new InvalidOptionError(`--ca-file ${file}: a certificate does not parse: ${(err as Error).message}`);
    }
  }
  return pem;
}

/** `--accept-type` values, each split at commas; an error names where the value came from. */
function acceptTypesOf(resolved: Resolved | undefined): string[] {
  const list = ((resolved?.value as string[] | undefined) ?? []).flatMap((v) => v.split(',')).map((v) => v.trim());
  try {
    return parseAcceptTypes(list.filter(Boolean));
  } catch (err) {
    throw new InvalidOptionError(`${(err as Error).message} (from ${resolved?.source ?? 'default'})`);
  }
}

/**
 * Parses and validates `crawl` arguments with the settings schema (cli/settings.ts): defaults <
 * --config file < CRAWLSTREAM_* environment < flags. Every error names the setting, the value and
 * where it came from. `env` is the process environment unless a test passes its own.
 */
export function parseCrawlArgs(args: string[], env: NodeJS.ProcessEnv = process.env): CrawlCommand {
  return crawlCommandOf(resolveSettings(args, env, CRAWL_USAGE));
}

/** The seeds of URL arguments, then of the `--seeds` file (one a line, `#` comments and blank lines dropped). */
export function seedsOf(urls: readonly string[], seedsFile: string | undefined): string[] {
  const seeds = [...urls];
  if (seedsFile) {
    let text: string;
    try {
      text = readFileSync(seedsFile, 'utf8');
    } catch (err) {
      throw new InvalidOptionError(
        `--seeds ${seedsFile} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    for (const line of text.split(/\r?\n/)) {
      const s = line.replace(/#.*/, '').trim();
      if (s) seeds.push(s);
    }
  }
  return seeds;
}

/** The command that effective settings describe. */
export function crawlCommandOf(resolved: ResolvedSettings): CrawlCommand {
  const { values, positionals } = resolved;
  const get = (name: string): SettingValue | undefined => values.get(name)?.value;
  const str = (name: string): string | undefined => get(name) as string | undefined;
  const data = str('data');
  if (!data) throw new InvalidOptionError(`--data DIR is required\n${CRAWL_USAGE}`);
  return { seeds: seedsOf(positionals, str('seeds')), dataDir: data, ...crawlSettingsOf(resolved) };
}

/**
 * Everything but the data dir and the seeds that crawl settings describe, checked together (the
 * crawl configuration's own rules, --resolve, --allow-ip, --ca-file, --metrics-host): what
 * `crawl` checks before it starts, and `config` before it shows the settings.
 */
export function crawlSettingsOf({ values, sites }: ResolvedSettings): Omit<CrawlCommand, 'seeds' | 'dataDir'> {
  const get = (name: string): SettingValue | undefined => values.get(name)?.value;
  const num = (name: string): number | undefined => get(name) as number | undefined;
  const str = (name: string): string | undefined => get(name) as string | undefined;
  const resolve = (get('resolve') as string[] | undefined) ?? [];
  for (const r of resolve) {
    try {
      parseResolveRule(r);
    } catch (err) {
      const message = (err as Error).message;
      throw new InvalidOptionError(message.includes('--resolve') ? message : `--resolve ${message}`);
    }
  }
  const allowIps = (get('allow-ip') as string[] | undefined) ?? [];
  for (const c of allowIps) {
    try {
      parseCidr(c);
    } catch (err) {
      throw new InvalidOptionError(`--allow-ip ${(err as Error).message}`);
    }
  }
  const list = (name: string): string[] => (get(name) as string[] | undefined) ?? [];
  const allowRules = list('allow');
  const denyRules = list('deny');
  for (const [flag, rules] of [
    ['--allow', allowRules],
    ['--deny', denyRules],
  ] as const) {
    for (const r of rules) {
      try {
        compileRule(r);
      } catch (err) {
        throw new InvalidOptionError(`${flag} ${(err as Error).message}`);
      }
    }
  }
  const denyExtensions = list('deny-extension').map((e) => parseExtension('--deny-extension', e));
  const allowExtensions = list('allow-extension').map((e) => parseExtension('--allow-extension', e));
  const partial: Record<string, unknown> = {};
  for (const setting of SETTINGS) {
    if (setting.config === undefined || setting.kind === 'list') continue;
    const v = get(setting.name);
    if (v !== undefined) partial[setting.config] = setting.scale !== undefined ? (v as number) * setting.scale : v;
  }
  // a short total timeout caps the connect and headers timeouts and the lease window unless they are set
  const fetchTimeoutMs = partial['fetchTimeoutMs'] as number;
  for (const [name, key] of [
    ['connect-timeout', 'connectTimeoutMs'],
    ['headers-timeout', 'headersTimeoutMs'],
    ['lease-window', 'leaseWindowMs'],
  ] as const) {
    if (values.get(name)?.source === 'default') partial[key] = Math.min(partial[key] as number, fetchTimeoutMs);
  }
  const caFile = str('ca-file');
  const config = validateCrawlConfig({
    threads: availableParallelism(),
    memoryBudgetBytes: cgroupMemoryLimit(),
    ...(partial as Partial<CrawlConfig>),
    resolve,
    allowIps,
    systemDns: get('no-system-dns') !== true,
    sitemaps: get('no-sitemaps') !== true,
    allowRules,
    denyRules,
    denyExtensions,
    allowExtensions,
    acceptTypes: acceptTypesOf(values.get('accept-type')),
    sites: sites.map((s) => s.rule),
    extraCaPem: caFile === undefined ? null : readCaFile(caFile),
    warcStore: warcStoreOf(values),
  });
  const duration = num('duration');
  const metricsPort = num('metrics-port');
  if (values.get('metrics-host')?.source !== 'default' && metricsPort === undefined)
    throw new InvalidOptionError('--metrics-host needs --metrics-port');
  const stallMs = num('stall-timeout')!;
  // every fetch slot busy with a slow fetch takes no input for up to --fetch-timeout: not a stall
  if (stallMs <= config.fetchTimeoutMs)
    throw new InvalidOptionError(
      `--stall-timeout must be longer than --fetch-timeout (${config.fetchTimeoutMs} ms), got ${stallMs}`,
    );
  return {
    untilIdle: get('until-idle') === true,
    maxPages: num('max-pages'),
    durationMs: duration === undefined ? undefined : duration * 1000,
    partitions: num('partitions')!,
    quiet: get('quiet') === true,
    config,
    log: parseLogOptions(str('log-level'), str('log-format')),
    ops: metricsPort === undefined ? undefined : { port: metricsPort, host: str('metrics-host')!, stallMs },
  };
}
