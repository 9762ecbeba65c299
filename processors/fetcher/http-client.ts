import { isIP } from 'node:net';
import tls, { type TLSSocket } from 'node:tls';
import { domainToASCII } from 'node:url';
import { Agent, buildConnector } from 'undici';
import type { Dispatcher } from 'undici';
import { CrawlError, InvalidOptionError, type CrawlErrorCode } from '../../core/errors.js';
import type { AddressGuard } from './address-guard.js';
import type { CachingDnsResolver } from './dns-resolver.js';
import { SendHooks } from './send-hook.js';
import { TlsSessions } from './tls-sessions.js';
import { classifyError } from './fetch-errors.js';

export interface HttpClientOptions {
  userAgent: string;
  resolver: CachingDnsResolver;
  guard: AddressGuard;
  /** TCP (and TLS) connect, after DNS. Default 5000. */
  connectTimeoutMs?: number;
  /** From sending the request to the end of the response headers. Default 15000. */
  headersTimeoutMs?: number;
  /** Whole fetch: DNS, connect, headers and body. Default 30000. */
  totalTimeoutMs?: number;
  /** Most raw (still content-encoded) body bytes kept. Default 10 MiB. */
  maxBodyBytes?: number;
  /** PEM CA certificates trusted for https besides Node's built-in roots (given, they replace NODE_EXTRA_CA_CERTS). */
  extraCaPem?: string | null;
}

export interface FetchOutcome {
  /** The URL as passed to `fetch`. */
  url: string;
  /** 0 when no response arrived. */
  status: number;
  /** Not exposed by undici; always undefined for now (the client speaks HTTP/1.x only). */
  httpVersion?: string;
  /** Lower-case names; a repeated header is joined with ', '. */
  headers: Record<string, string>;
  /** Raw bytes as received (still content-encoded), at most maxBodyBytes. */
  body: Buffer;
  /** True when the body was cut at maxBodyBytes (errorCode CS_TOO_LARGE), or refused by type (CS_REFUSED_TYPE). */
  truncated: boolean;
  /** Epoch ms. */
  startedAt: number;
  durationMs: number;
  /** The checked address the connection went to. */
  remoteAddress?: string;
  errorCode?: CrawlErrorCode;
  errorMessage?: string;
  /** For a 301/302/303/307/308 with Location: absolute, resolved against `url`. Never followed. */
  redirectTarget?: string;
  /** Retry-After (delta-seconds or HTTP-date) as milliseconds from now. */
  retryAfterMs?: number;
}

const DEFAULT_ACCEPT = 'text/html,application/xhtml+xml,*/*;q=0.8';
/** Headers a caller may not set: they belong to the connection or to the checked origin. */
const RESERVED_HEADERS = new Set([
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'upgrade',
  'te',
  'expect',
  'proxy-connection',
  'trailer',
]);

interface Target {
  origin: string;
  path: string;
  href: string;
}

/**
 * Fetches one URL at a time per origin, safely: every connection goes to an address that the
 * resolver returned and the guard allowed, checked in the connector right before connecting,
 * so a refused address never gets a socket. Host header and TLS servername stay the URL's
 * (ASCII) host name. One keep-alive connection per origin; redirects are returned, not followed;
 * the body is streamed and cut at maxBodyBytes. `fetch` never rejects: every failure is an
 * outcome with an errorCode.
 */
export class HttpClient {
  private readonly agent: Agent;
  /** The agent, telling `fetch`'s `onSend` when a request is written (send-hook.ts). */
  private readonly dispatcher: Dispatcher;
  private readonly sendHooks = new SendHooks();
  private readonly baseHeaders: Record<string, string>;
  private readonly totalTimeoutMs: number;
  private readonly maxBodyBytes: number;
  /** origin → address of its current connection (one per origin). */
  private readonly connectedTo = new Map<string, string>();
  /** TLS sessions to resume, by server name. */
  readonly tlsSessions = new TlsSessions();

  constructor(o: HttpClientOptions) {
    if (typeof o.userAgent !== 'string' || o.userAgent.trim() === '' || /[\r\n]/.test(o.userAgent)) {
      throw new InvalidOptionError(
        `userAgent must be a non-empty single-line string, got ${JSON.stringify(o.userAgent)}`,
      );
    }
    const connectTimeoutMs = positiveInteger('connectTimeoutMs', o.connectTimeoutMs ?? 5_000);
    const headersTimeoutMs = positiveInteger('headersTimeoutMs', o.headersTimeoutMs ?? 15_000);
    this.totalTimeoutMs = positiveInteger('totalTimeoutMs', o.totalTimeoutMs ?? 30_000);
    this.maxBodyBytes = positiveInteger('maxBodyBytes', o.maxBodyBytes ?? 10 * 1024 * 1024);
    this.baseHeaders = {
      'user-agent': o.userAgent,
      accept: DEFAULT_ACCEPT,
      'accept-encoding': 'gzip, deflate, br',
    };

    const connectOptions = {
      timeout: connectTimeoutMs,
      secureContext: o.extraCaPem ? trustingAlso(o.extraCaPem) : defaultContext(),
      // undici's session cache is weak (see TlsSessions): this client keeps its own
      maxCachedSessions: 0,
    };
    const socketConnector = buildConnector(connectOptions);
    const sessions = this.tlsSessions;
    const { resolver, guard } = o;
    const connector: buildConnector.connector = (opts, callback) => {
      const origin = `${opts.protocol}//${opts.host ?? opts.hostname}`;
      let settled = false;
      const fail = (err: Error): void => {
        if (!settled) {
          settled = true;
          callback(err, null);
        }
      };
      pickAddress(resolver, guard, opts.hostname)
        .then((address) => {
          const servername = opts.servername || (isIP(opts.hostname) === 0 ? opts.hostname : undefined);
          const tlsName = opts.protocol === 'https:' ? servername : undefined;
          const session = tlsName === undefined ? undefined : sessions.get(tlsName);
          // a connector for one connection is a closure and an empty map: nothing next to a handshake
          const connect = session === undefined ? socketConnector : buildConnector({ ...connectOptions, session });
          connect({ ...opts, hostname: address, ...(servername ? { servername } : {}) }, (err, socket) => {
            if (err) return fail(err);
            if (tlsName !== undefined) sessions.track(tlsName, socket as TLSSocket);
            settled = true;
            this.connectedTo.set(origin, address);
            callback(null, socket!);
          });
        })
        .catch(fail);
    };

    this.agent = new Agent({
      connections: 1,
      pipelining: 1,
      connect: connector,
      headersTimeout: headersTimeoutMs,
      // the total timeout bounds the body; this only stops a stall from outliving it
      bodyTimeout: this.totalTimeoutMs,
    });
    this.agent.on('disconnect', (origin) => this.connectedTo.delete(origin.origin));
    this.dispatcher = this.agent.compose(this.sendHooks.interceptor);
  }

  /**
   * Fetches `url` with GET. Resolves with an outcome whatever happens; never rejects. When
   * `acceptBody` answers false on a 2xx response's headers, the body is not read: the connection
   * is closed at once and the outcome is CS_REFUSED_TYPE with an empty, truncated body.
   * `onSend` runs once, synchronously, right before the request's head is written to its socket
   * (after DNS and the connect); never when the request fails before that. When it returns an
   * error, nothing is written and the outcome is that error's (its code, for a CrawlError).
   */
  async fetch(
    url: string,
    headers: Record<string, string> = {},
    acceptBody?: (headers: Record<string, string>) => boolean,
    onSend?: () => Error | void,
  ): Promise<FetchOutcome> {
    const startedAt = Date.now();
    const t0 = performance.now();
    const outcome: FetchOutcome = {
      url,
      status: 0,
      headers: {},
      body: Buffer.alloc(0),
      truncated: false,
      startedAt,
      durationMs: 0,
    };
    const done = (code?: CrawlErrorCode, message?: string): FetchOutcome => {
      if (code !== undefined) {
        outcome.errorCode = code;
        outcome.errorMessage = message;
      }
      outcome.durationMs = Math.round(performance.now() - t0);
      return outcome;
    };

    const target = parseTarget(url);
    if (typeof target === 'string') return done('CS_BAD_URL', target);

    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new CrawlError('CS_TIMEOUT', `no complete response within ${this.totalTimeoutMs} ms`));
    }, this.totalTimeoutMs);
    let body: Dispatcher.ResponseData['body'] | undefined;
    let sink: BodySink | undefined;
    if (onSend) this.sendHooks.on(controller.signal, onSend);
    try {
      const response = await this.dispatcher.request({
        origin: target.origin,
        path: target.path,
        method: 'GET',
        headers: this.requestHeaders(headers),
        signal: controller.signal,
      });
      body = response.body;
      outcome.status = response.statusCode;
      outcome.headers = flattenHeaders(response.headers);
      outcome.remoteAddress = this.connectedTo.get(target.origin);
      annotate(outcome, target.href, startedAt);
      if (acceptBody && outcome.status >= 200 && outcome.status < 300 && !acceptBody(outcome.headers)) {
        outcome.truncated = true;
        // `finally` destroys the unread body, which closes the connection: no more of it is read
        return done('CS_REFUSED_TYPE', `content-type ${outcome.headers['content-type']} is not an accepted type`);
      }

      sink = new BodySink(this.maxBodyBytes);
      for await (const chunk of body as AsyncIterable<Buffer>) {
        if (!sink.push(chunk)) break;
      }
      outcome.body = sink.bytes();
      outcome.truncated = sink.truncated;
      if (outcome.truncated) {
        return done('CS_TOO_LARGE', `body exceeds ${this.maxBodyBytes} bytes; kept the first ${this.maxBodyBytes}`);
      }
      return done();
    } catch (err) {
      if (sink) outcome.body = sink.bytes();
      const { code, message } = timedOut
        ? { code: 'CS_TIMEOUT' as const, message: `no complete response within ${this.totalTimeoutMs} ms` }
        : classifyError(err);
      const progress = `after status ${outcome.status}, ${outcome.body.length} body bytes`;
      return done(code, outcome.status === 0 ? message : `${message} (${progress})`);
    } finally {
      clearTimeout(timer);
      // a cut or failed body must not keep the connection, nor its bytes, alive
      if (body && !body.readableEnded) {
        // a body never iterated has no 'error' listener, and undici reports its own abort as one
        body.on('error', () => {});
        body.destroy();
      }
    }
  }

  /**
   * The request head `fetch(url, headers)` sends, as HTTP/1.1 text ending in an empty line, for
   * the WARC request record. A URL that cannot be fetched gets its bare request line.
   */
  requestHead(url: string, headers: Record<string, string> = {}): string {
    const target = parseTarget(url);
    if (typeof target === 'string') return `GET ${url.replace(/[\r\n]/g, '')} HTTP/1.1\r\n\r\n`;
    const lines = [`GET ${target.path} HTTP/1.1`, `host: ${new URL(target.origin).host}`];
    for (const [name, value] of Object.entries(this.requestHeaders(headers))) lines.push(`${name}: ${value}`);
    return `${lines.join('\r\n')}\r\n\r\n`;
  }

  /** Closes idle connections and waits for fetches in flight. */
  async close(): Promise<void> {
    await this.agent.close();
  }

  private requestHeaders(extra: Record<string, string>): Record<string, string> {
    const merged = { ...this.baseHeaders };
    for (const [name, value] of Object.entries(extra)) {
      const lower = name.toLowerCase();
      if (!RESERVED_HEADERS.has(lower)) merged[lower] = value;
    }
    return merged;
  }
}

/** Collects at most `cap` body bytes, in the chunks they arrived in. */
class BodySink {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  truncated = false;

  constructor(private readonly cap: number) {}

  /** Takes a chunk; false once the cap is reached and the rest of the body must be dropped. */
  push(chunk: Buffer): boolean {
    const room = this.cap - this.size;
    if (chunk.length > room) {
      this.truncated = true;
      if (room > 0) this.chunks.push(chunk.subarray(0, room));
      this.size = this.cap;
      return false;
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
    return true;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }
}

/** Returns a parsed target, or a message saying why the URL cannot be fetched. */
function parseTarget(raw: string): Target | string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return `'${raw}' is not a valid absolute URL`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `'${raw}': scheme ${u.protocol} is not http or https`;
  if (u.hostname === '') return `'${raw}' has no host`;
  if (!u.hostname.startsWith('[')) {
    const ascii = domainToASCII(u.hostname);
    if (ascii === '') return `'${raw}': host '${u.hostname}' is not a valid domain name`;
    u.hostname = ascii;
  }
  return { origin: u.origin, path: `${u.pathname}${u.search}`, href: u.href };
}

/** The first resolved address the guard allows; throws CS_DNS or CS_REFUSED_ADDRESS. */
async function pickAddress(resolver: CachingDnsResolver, guard: AddressGuard, hostname: string): Promise<string> {
  const addresses = await resolver.resolve(hostname);
  const refusals: string[] = [];
  for (const address of addresses) {
    const verdict = guard.check(address);
    if (verdict.ok) return address;
    refusals.push(verdict.reason);
  }
  throw new CrawlError('CS_REFUSED_ADDRESS', `refused to connect to ${hostname}: ${refusals.join('; ')}`);
}

function flattenHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

/** Statuses whose Location is a redirect to follow (as a new link); 304 and 300 are not. */
const REDIRECT_STATUS = new Set([301, 302, 303, 307, 308]);

/** Adds redirectTarget and retryAfterMs from the response headers. */
function annotate(outcome: FetchOutcome, base: string, now: number): void {
  const location = outcome.headers['location'];
  if (REDIRECT_STATUS.has(outcome.status) && location !== undefined) {
    try {
      outcome.redirectTarget = new URL(location, base).href;
    } catch {
      // an unusable Location leaves the 3xx without a target; the caller records it as such
    }
  }
  const retryAfter = outcome.headers['retry-after'];
  if (retryAfter !== undefined) {
    const ms = parseRetryAfter(retryAfter, now);
    if (ms !== undefined) outcome.retryAfterMs = ms;
  }
}

/** Retry-After as ms from `now`: delta-seconds or an HTTP-date (a past date is 0). */
export function parseRetryAfter(value: string, now: number): number | undefined {
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value <= 0) {
    throw new InvalidOptionError(`${name} must be a positive integer, got ${value}`);
  }
  return value;
}

/** One secure context per extra CA, shared by every client of the process. */
const contexts = new Map<string, tls.SecureContext>();
let builtInContext: tls.SecureContext | undefined;

/**
 * The secure context of the built-in roots (and NODE_EXTRA_CA_CERTS), made once per process:
 * without one, tls.connect makes a context for every connection (~3 % of a TLS crawl's CPU).
 */
function defaultContext(): tls.SecureContext {
  builtInContext ??= tls.createSecureContext();
  return builtInContext;
}

/**
 * A TLS context that trusts the built-in roots and `pem` too (a `ca` replaces the default trust
 * store, so the roots are passed along). Built once: passed as `ca` instead, Node parses every root
 * again for each connection (~37 ms of CPU on the 2-core lab machine), the cost of a page or more.
 */
function trustingAlso(pem: string): tls.SecureContext {
  let context = contexts.get(pem);
  if (context === undefined) {
    context = tls.createSecureContext({ ca: [...tls.rootCertificates, pem] });
    contexts.set(pem, context);
  }
  return context;
}
