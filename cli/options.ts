import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { InvalidOptionError } from '../core/errors.js';
import { parseLogOptions, type LoggerOptions } from '../core/logger.js';
import { validateCrawlConfig, type CrawlConfig } from '../processors/common/crawl-config.js';
import { parseCidr } from '../processors/fetcher/address-guard.js';
import { parseResolveRule } from '../processors/fetcher/dns-resolver.js';

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
  /** Where /metrics, /healthz and /readyz are served; undefined: not served. */
  readonly ops: { readonly port: number; readonly host: string } | undefined;
}

export const CRAWL_USAGE = `usage: crawlstream crawl [URL...] [--seeds FILE] --data DIR [options]

  --data DIR             where topics, state and WARC files live (run again to resume)
  --seeds FILE           seed URLs, one per line (# comments allowed)
  --resolve PATTERN=IP   map host names to an address, like curl (e.g. '*.test=127.0.0.1'); repeatable
  --allow-ip CIDR        let the fetcher connect to this otherwise refused range; repeatable
  --until-idle           exit 0 once nothing is queued, due or in flight
  --max-pages N          stop after about N pages
  --duration SECONDS     stop after this long
  --min-delay MS         smallest gap between two fetches to one host (default 1000, the floor)
  --user-agent UA        User-Agent; its first token is matched against robots.txt
  --fetch-timeout MS     total time one fetch may take (default 30000)
  --robots-retry MS      first wait after robots.txt answered 5xx (default 60000, doubling)
  --site-budget N        URLs a site may get before any other site links to it (default 1000)
  --site-budget-per-inlink N  budget added per distinct linking site (default 100)
  --host-slots N         hosts with URLs in flight or queued at once, per partition (default 1000;
                         size it as target pages/s × typical gap s / partitions)
  --ip-concurrency N     leases in flight per IP address (default 8)
  --ip-gap MS            least time between two fetch starts on one IP address (default 100)
  --partitions N         partitions per topic for a new data dir (default 4)
  --no-system-dns        resolve only names matched by --resolve
  --ca-file FILE         also trust these PEM CA certificates for https (besides the built-in roots)
  --metrics-port N       serve /metrics, /healthz and /readyz on this port (0: any free port)
  --metrics-host ADDR    address those endpoints bind to (default 127.0.0.1)
  --log-level LEVEL      debug, info (default), warn or error
  --log-format FORMAT    text (default) or json: one JSON object per line, for log pipelines
  --quiet                no progress lines`;

function wholeNumber(name: string, raw: string | undefined, min: number): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min) {
    throw new InvalidOptionError(`--${name} must be a whole number of at least ${min}, got ${JSON.stringify(raw)}`);
  }
  return n;
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

/** Parses and validates `crawl` arguments; every error names the option and the value. */
export function parseCrawlArgs(args: string[]): CrawlCommand {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        seeds: { type: 'string' },
        data: { type: 'string' },
        resolve: { type: 'string', multiple: true },
        'allow-ip': { type: 'string', multiple: true },
        'until-idle': { type: 'boolean' },
        'max-pages': { type: 'string' },
        duration: { type: 'string' },
        'min-delay': { type: 'string' },
        'user-agent': { type: 'string' },
        'fetch-timeout': { type: 'string' },
        'robots-retry': { type: 'string' },
        partitions: { type: 'string' },
        'site-budget': { type: 'string' },
        'site-budget-per-inlink': { type: 'string' },
        'host-slots': { type: 'string' },
        'ip-concurrency': { type: 'string' },
        'ip-gap': { type: 'string' },
        'no-system-dns': { type: 'boolean' },
        'ca-file': { type: 'string' },
        quiet: { type: 'boolean' },
        'metrics-port': { type: 'string' },
        'metrics-host': { type: 'string' },
        'log-level': { type: 'string' },
        'log-format': { type: 'string' },
      },
    });
  } catch (err) {
    throw new InvalidOptionError(`${(err as Error).message}\n${CRAWL_USAGE}`);
  }
  const v = parsed.values;
  if (!v.data) throw new InvalidOptionError(`--data DIR is required\n${CRAWL_USAGE}`);
  const seeds = [...parsed.positionals];
  if (v.seeds) {
    let text: string;
    try {
      text = readFileSync(v.seeds, 'utf8');
    } catch (err) {
      throw new InvalidOptionError(
        `--seeds ${v.seeds} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    for (const line of text.split(/\r?\n/)) {
      const s = line.replace(/#.*/, '').trim();
      if (s) seeds.push(s);
    }
  }
  const resolve = v.resolve ?? [];
  for (const r of resolve) {
    try {
      parseResolveRule(r);
    } catch (err) {
      const message = (err as Error).message;
      throw new InvalidOptionError(message.includes('--resolve') ? message : `--resolve ${message}`);
    }
  }
  const allowIps = v['allow-ip'] ?? [];
  for (const c of allowIps) {
    try {
      parseCidr(c);
    } catch (err) {
      throw new InvalidOptionError(`--allow-ip ${(err as Error).message}`);
    }
  }
  const fetchTimeoutMs = wholeNumber('fetch-timeout', v['fetch-timeout'], 100);
  const config = validateCrawlConfig({
    resolve,
    allowIps,
    systemDns: v['no-system-dns'] !== true,
    extraCaPem: v['ca-file'] === undefined ? null : readCaFile(v['ca-file']),
    ...(v['min-delay'] !== undefined ? { minDelayMs: wholeNumber('min-delay', v['min-delay'], 1000)! } : {}),
    ...(v['user-agent'] !== undefined ? { userAgent: v['user-agent'] } : {}),
    ...(fetchTimeoutMs !== undefined
      ? {
          fetchTimeoutMs,
          headersTimeoutMs: Math.min(15_000, fetchTimeoutMs),
          connectTimeoutMs: Math.min(5_000, fetchTimeoutMs),
          leaseWindowMs: Math.min(10_000, fetchTimeoutMs),
        }
      : {}),
    ...(v['robots-retry'] !== undefined ? { robotsRetryMs: wholeNumber('robots-retry', v['robots-retry'], 100)! } : {}),
    ...(v['site-budget'] !== undefined ? { sitePageBudget: wholeNumber('site-budget', v['site-budget'], 1)! } : {}),
    ...(v['site-budget-per-inlink'] !== undefined
      ? { siteBudgetPerInlink: wholeNumber('site-budget-per-inlink', v['site-budget-per-inlink'], 0)! }
      : {}),
    ...(v['host-slots'] !== undefined ? { activeHostSlots: wholeNumber('host-slots', v['host-slots'], 1)! } : {}),
    ...(v['ip-concurrency'] !== undefined
      ? { ipConcurrency: wholeNumber('ip-concurrency', v['ip-concurrency'], 1)! }
      : {}),
    ...(v['ip-gap'] !== undefined ? { ipGapMs: wholeNumber('ip-gap', v['ip-gap'], 0)! } : {}),
  });
  const duration = wholeNumber('duration', v.duration, 1);
  const metricsPort = wholeNumber('metrics-port', v['metrics-port'], 0);
  if (metricsPort !== undefined && metricsPort > 65_535)
    throw new InvalidOptionError(`--metrics-port must be a TCP port (0 to 65535), got ${metricsPort}`);
  if (v['metrics-host'] !== undefined && metricsPort === undefined)
    throw new InvalidOptionError('--metrics-host needs --metrics-port');
  return {
    seeds,
    dataDir: v.data,
    untilIdle: v['until-idle'] === true,
    maxPages: wholeNumber('max-pages', v['max-pages'], 1),
    durationMs: duration === undefined ? undefined : duration * 1000,
    partitions: wholeNumber('partitions', v.partitions, 1) ?? 4,
    quiet: v.quiet === true,
    config,
    log: parseLogOptions(v['log-level'], v['log-format']),
    ops: metricsPort === undefined ? undefined : { port: metricsPort, host: v['metrics-host'] ?? '127.0.0.1' },
  };
}
