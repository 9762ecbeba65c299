import { appendFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { LoopTurns } from './loop-turns.js';
import { completeAtWrite } from './reply-end.js';
import { InvalidOptionError } from '../core/errors.js';
import { renderPage, type SiteSpec } from './sites.js';
import { standardWeb } from './standard-web.js';
import type { Server as HttpsServer } from 'node:https';
import { httpsServers, type HostCertificate } from './tls.js';
import { fillPorts, originReply, type Scheme } from './origins.js';
import type { RequestLogEntry } from './request-log.js';
import { DEFAULT_ADDRESS, listenEverywhere, loopbackAddress } from './addresses.js';

export interface SyntheticWebOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Defaults to `standardWeb()`. */
  sites?: SiteSpec[];
  /** Appends one JSON line per finished request. */
  logFile?: string;
  /**
   * Also serve https with this key and certificate (PEM; see tls.ts), on every address the web
   * listens on, all on one more free port (`httpsPort`); to a client naming a host of one of
   * `hosts` (SNI), with that one's certificate instead (`makeHostCertificates`).
   */
  tls?: { key: string; cert: string; hosts?: readonly HostCertificate[] };
}

interface Reply {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
  delayMs: number;
  pace?: { readonly chunkBytes: number; readonly gapMs: number };
}

// keep-alive outlives the longest politeness wait of the standard web (Retry-After 2 s, Crawl-delay 2 s)
const KEEP_ALIVE_MS = 15_000;
const FORCE_CLOSE_MS = 1_000;

const now = (): number => performance.timeOrigin + performance.now();

/**
 * A loopback HTTP server that serves many virtual hosts, chosen by the Host header, and logs every
 * request it receives, unknown hosts included. It listens on 127.0.0.1 and on every other loopback
 * address a site names (`SiteSpec.address`), all on one port; a request for a site that reaches
 * another address than the site's is answered 421 (Misdirected Request). Page-hit counters (used
 * by throttled sites) start at zero for each server. With `tls` it serves https the same way on
 * every one of those addresses, on its own port, and the 421 rule holds there too; `{{HTTPS_PORT}}`
 * in a page's HTML becomes that port, as `{{PORT}}` becomes the http one.
 */
export class SyntheticWeb {
  readonly #servers: (Server | HttpsServer)[];
  readonly #byHost: ReadonlyMap<string, SiteSpec>;
  readonly #logFile: string | undefined;
  readonly #finished: RequestLogEntry[] = [];
  readonly #pageHits = new Map<string, number>();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #turns = new LoopTurns(now);
  /** The https port; 0 when the web serves http only. */
  httpsPort = 0;
  /**
   * Connections accepted so far: plain http, https handshakes completed, and how many of those
   * resumed an earlier TLS session (no certificate sent or checked).
   */
  readonly connections = { http: 0, https: 0, resumed: 0 };
  #seq = 0;
  #closing: Promise<void> | undefined;

  private constructor(
    servers: (Server | HttpsServer)[],
    readonly port: number,
    readonly sites: readonly SiteSpec[],
    logFile: string | undefined,
  ) {
    this.#servers = servers;
    this.#byHost = new Map(sites.map((s) => [s.host, s]));
    this.#logFile = logFile;
    this.#turns.start();
  }

  /**
   * Validates the options, then listens on 127.0.0.1 and the sites' other loopback addresses, one
   * port for all (never any address outside 127.0.0.0/8), and with `tls` on each of them again for
   * https, on one other port.
   */
  static async start(options: SyntheticWebOptions = {}): Promise<SyntheticWeb> {
    const port = options.port ?? 0;
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new InvalidOptionError(`port must be an integer from 0 to 65535, got ${String(port)}`);
    }
    const sites = options.sites ?? standardWeb();
    const seen = new Set<string>();
    for (const site of sites) {
      if (!/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?\.test$/.test(site.host)) {
        throw new InvalidOptionError(
          `site host must be a lowercase name ending in .test, got ${JSON.stringify(site.host)}`,
        );
      }
      if (seen.has(site.host)) throw new InvalidOptionError(`site host ${site.host} is declared twice`);
      seen.add(site.host);
    }

    const addresses = [DEFAULT_ADDRESS];
    for (const site of sites) {
      const address = loopbackAddress(site.host, site.address ?? DEFAULT_ADDRESS);
      if (!addresses.includes(address)) addresses.push(address);
    }

    let web: SyntheticWeb | undefined;
    const handler =
      (scheme: Scheme) =>
      (req: IncomingMessage, res: ServerResponse): void => {
        if (web === undefined)
          res.destroy(); // unreachable: web is set in the tick listening completes
        else web.#handle(req, res, scheme);
      };
    const keptAlive = <S extends Server | HttpsServer>(server: S): S => {
      server.keepAliveTimeout = KEEP_ALIVE_MS;
      return server;
    };
    // the same port on every address: a URL names the port, the resolver the address
    const plain = await listenEverywhere(() => keptAlive(createServer(handler('http'))), port, addresses);
    let secure: { servers: HttpsServer[]; port: number } = { servers: [], port: 0 };
    if (options.tls !== undefined) {
      const open = httpsServers(options.tls, handler('https'));
      try {
        secure = await listenEverywhere(() => keptAlive(open()), 0, addresses);
      } catch (err) {
        await Promise.all(plain.servers.map((s) => new Promise((resolve) => s.close(resolve))));
        throw err;
      }
    }
    web = new SyntheticWeb([...plain.servers, ...secure.servers], plain.port, sites, options.logFile);
    web.httpsPort = secure.port;
    const counts = web.connections;
    const turns = web.#turns;
    for (const s of plain.servers)
      s.on('connection', (socket: Socket) => {
        counts.http++;
        turns.accepted(socket);
      });
    for (const s of secure.servers)
      s.on('secureConnection', (socket: TLSSocket) => {
        counts.https++;
        if (socket.isSessionReused()) counts.resumed++;
      });
    return web;
  }

  /** `http://${host}:${port}${path ?? '/'}`. */
  url(host: string, path?: string): string {
    return `http://${host}:${this.port}${path ?? '/'}`;
  }

  /** `https://${host}:${httpsPort}${path ?? '/'}`. */
  httpsUrl(host: string, path?: string): string {
    return `https://${host}:${this.httpsPort}${path ?? '/'}`;
  }

  /**
   * The address a host of this web is served on (its site's `address`, else 127.0.0.1), undefined
   * for a host it does not serve: the per-IP judge's map (`PolitenessOptions.ipOf`), so every
   * judged crawl is judged per address too.
   */
  readonly ipOf = (host: string): string | undefined => {
    const site = this.#byHost.get(host) ?? this.#bySuffix(host);
    return site === undefined ? undefined : (site.address ?? DEFAULT_ADDRESS);
  };

  /** Home URLs of the sites marked `seed`, in declaration order. */
  seedUrls(): string[] {
    return this.sites.filter((s) => s.seed).map((s) => this.url(s.host));
  }

  /** A copy of the finished requests, in arrival order; requests still in flight are not included. */
  requests(): RequestLogEntry[] {
    return this.#finished.map((e) => ({ ...e })).sort((a, b) => a.seq - b.seq);
  }

  /**
   * The finished requests from the `from`-th to finish on (0-based), in the order they finished:
   * a cheap way to follow a long crawl. The entries are the log's own; read them, never change them.
   */
  finishedSince(from: number): readonly RequestLogEntry[] {
    return this.#finished.slice(from);
  }

  /**
   * Stops listening and closes idle keep-alive sockets at once; responses in flight finish with
   * `Connection: close`, or are cut after ~1 s (and logged as aborted). Idempotent.
   */
  close(): Promise<void> {
    const closeOne = (server: Server | HttpsServer) =>
      new Promise<void>((resolve) => {
        const force = setTimeout(() => server.closeAllConnections(), FORCE_CLOSE_MS);
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      });
    this.#closing ??= Promise.all(this.#servers.map(closeOne)).then(() => {
      this.#turns.stop();
      for (const timer of this.#timers) clearTimeout(timer);
    });
    return this.#closing;
  }

  #handle(req: IncomingMessage, res: ServerResponse, scheme: Scheme): void {
    const entry: RequestLogEntry = {
      seq: ++this.#seq,
      host: hostOf(req.headers.host),
      scheme,
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      start: now(),
      end: 0,
      status: 0,
      bytes: 0,
    };
    const slack = this.#turns.slack(entry.start, req.socket);
    if (slack !== undefined) entry.startSlack = Math.round(slack * 10) / 10;
    const userAgent = req.headers['user-agent'];
    if (userAgent !== undefined) entry.userAgent = userAgent;
    const ifNoneMatch = req.headers['if-none-match'];
    if (ifNoneMatch !== undefined) entry.ifNoneMatch = ifNoneMatch;
    const ifModifiedSince = req.headers['if-modified-since'];
    if (ifModifiedSince !== undefined) entry.ifModifiedSince = ifModifiedSince;
    const address = req.socket.localAddress;
    if (address !== undefined) entry.address = address;
    req.resume(); // bodies are never read; drain so keep-alive continues

    let logged = false;
    /** When the last byte was handed to the socket, if the socket took the whole response at once. */
    let written: number | undefined;
    const log = (aborted: boolean): void => {
      if (logged) return;
      logged = true;
      entry.end = !aborted && written !== undefined ? written : now();
      entry.status = res.headersSent ? res.statusCode : 0;
      if (aborted) entry.aborted = true;
      this.#finished.push(entry);
      if (this.#logFile !== undefined) appendFileSync(this.#logFile, `${JSON.stringify(entry)}\n`);
    };
    res.once('finish', () => log(false));
    res.once('close', () => log(!res.writableFinished));

    const reply = this.#reply(entry, req, scheme);
    const send = (): void => {
      if (res.destroyed) return;
      const retryAfter = reply.headers['retry-after'];
      if (retryAfter !== undefined) entry.retryAfter = retryAfter;
      if (retryAfter !== undefined && /^\d+$/.test(retryAfter)) entry.retryAfterSec = Number(retryAfter);
      const headers: Record<string, string> = { ...reply.headers };
      // RFC 9110 8.6: a 304's Content-Length, if any, must be the 200's; none is simplest
      if (reply.status !== 304) headers['content-length'] = String(reply.body.byteLength);
      if (this.#closing !== undefined) headers['connection'] = 'close'; // lets close() finish without cutting
      res.writeHead(reply.status, headers);
      const before = now();
      if (entry.method === 'HEAD') {
        res.end();
      } else if (reply.pace !== undefined) {
        return this.#sendPaced(res, reply.body, reply.pace, entry);
      } else {
        entry.bytes = reply.body.byteLength;
        res.end(reply.body);
      }
      if (completeAtWrite(res, scheme)) written = before;
    };
    if (reply.delayMs <= 0) return send();
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      send();
    }, reply.delayMs);
    this.#timers.add(timer);
  }

  /**
   * Writes `body` a chunk at a time, `pace.gapMs` apart, and counts in `entry.bytes` only the
   * chunks whose write the socket confirmed; stops at the first failed write or when the client
   * has gone.
   */
  #sendPaced(res: ServerResponse, body: Uint8Array, pace: NonNullable<Reply['pace']>, entry: RequestLogEntry): void {
    let offset = 0;
    const next = (): void => {
      if (res.destroyed) return;
      if (offset >= body.byteLength) return void res.end();
      const chunk = body.subarray(offset, Math.min(body.byteLength, offset + pace.chunkBytes));
      offset += chunk.byteLength;
      res.write(chunk, (err) => {
        if (err) return;
        entry.bytes += chunk.byteLength;
        const timer = setTimeout(() => {
          this.#timers.delete(timer);
          next();
        }, pace.gapMs);
        this.#timers.add(timer);
      });
    };
    next();
  }

  /** The site that serves every subdomain of a parent of `host`, if any (`SiteSpec.subdomains`). */
  #bySuffix(host: string): SiteSpec | undefined {
    for (let dot = host.indexOf('.'); dot !== -1; dot = host.indexOf('.', dot + 1)) {
      const site = this.#byHost.get(host.slice(dot + 1));
      if (site?.subdomains) return site;
    }
    return undefined;
  }

  #reply(entry: RequestLogEntry, req: IncomingMessage, scheme: Scheme): Reply {
    const site = this.#byHost.get(entry.host) ?? this.#bySuffix(entry.host);
    if (site === undefined) return text(404, `no site is served at ${entry.host || '(no Host header)'}\n`);
    const served = site.address ?? DEFAULT_ADDRESS;
    if (entry.address !== undefined && entry.address !== served) {
      return text(421, `${entry.host} is served on ${served}, not on ${entry.address}\n`);
    }
    const pathname = pagePath(entry.path);
    const query = entry.path.indexOf('?');
    const byOrigin = originReply(site, scheme, pathname, query < 0 ? '' : entry.path.slice(query), {
      http: this.port,
      https: this.httpsPort,
    });
    if (byOrigin !== undefined) {
      const reply = text(byOrigin.status, fillPorts(byOrigin.body, { http: this.port, https: this.httpsPort }));
      if (byOrigin.location !== undefined) reply.headers['location'] = byOrigin.location;
      return reply;
    }

    const pageHits = (this.#pageHits.get(site.host) ?? 0) + 1;
    this.#pageHits.set(site.host, pageHits);
    const siteDelay = site.delayMs ?? 0;
    if (site.throttle !== undefined && pageHits <= site.throttle.requests) {
      const reply = text(site.throttle.status, 'slow down\n');
      reply.headers['retry-after'] = String(site.throttle.retryAfterSec);
      return { ...reply, delayMs: siteDelay };
    }

    const own = site.respond?.({
      method: entry.method,
      host: entry.host,
      path: entry.path,
      pathname,
      port: this.port,
      time: entry.start,
      ...(entry.ifNoneMatch !== undefined ? { ifNoneMatch: entry.ifNoneMatch } : {}),
      ...(entry.ifModifiedSince !== undefined ? { ifModifiedSince: entry.ifModifiedSince } : {}),
    });
    if (own !== undefined) {
      const body = typeof own.body === 'string' ? Buffer.from(own.body, 'utf8') : own.body;
      return {
        status: own.status,
        headers: { ...own.headers },
        body,
        delayMs: siteDelay,
        ...(own.pace !== undefined ? { pace: own.pace } : {}),
      };
    }

    const page = Object.hasOwn(site.pages, pathname) ? site.pages[pathname] : site.route?.(pathname);
    if (page === undefined) return { ...text(404, `no page ${pathname} on ${site.host}\n`), delayMs: siteDelay };

    const rendered = renderPage(page, { port: this.port, host: entry.host, path: entry.path, pageHits });
    // links into https origins name the https port, as Locations do
    const filled =
      typeof rendered === 'string' ? fillPorts(rendered, { http: this.port, https: this.httpsPort }) : rendered;
    let body = typeof filled === 'string' ? Buffer.from(filled, 'utf8') : filled;
    const headers: Record<string, string> = { 'content-type': page.contentType ?? 'text/html; charset=utf-8' };
    for (const [name, value] of Object.entries(page.headers ?? {}))
      headers[name.toLowerCase()] = fillPorts(value, { http: this.port, https: this.httpsPort });
    if (page.gzip) {
      headers['vary'] = 'Accept-Encoding';
      if (acceptsGzip(req.headers['accept-encoding'])) {
        body = gzipSync(body);
        headers['content-encoding'] = 'gzip';
      }
    }
    return { status: page.status ?? 200, headers, body, delayMs: siteDelay + (page.delayMs ?? 0) };
  }
}

function text(status: number, body: string): Reply {
  return {
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8' },
    body: Buffer.from(body, 'utf8'),
    delayMs: 0,
  };
}

/** The Host header's name: lowercased, port and a trailing dot removed. */
function hostOf(header: string | undefined): string {
  if (header === undefined) return '';
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1 || undefined);
  const colon = h.lastIndexOf(':');
  const name = colon < 0 ? h : h.slice(0, colon);
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** The key into `SiteSpec.pages`: path without query or fragment, `;jsessionid=` removed. */
function pagePath(target: string): string {
  let path = target;
  if (!path.startsWith('/')) {
    try {
      path = new URL(path).pathname; // absolute-form request target
    } catch {
      return path;
    }
  }
  const cut = path.search(/[?#]/);
  if (cut >= 0) path = path.slice(0, cut);
  return path.replace(/;jsessionid=[^/]*/gi, '');
}

function acceptsGzip(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header.join(',') : (header ?? '');
  return value.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding !== 'gzip' && coding !== 'x-gzip' && coding !== '*') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}
