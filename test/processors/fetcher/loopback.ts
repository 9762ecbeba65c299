import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { AddressGuard, parseCidr } from '../../../processors/fetcher/address-guard.js';
import { CachingDnsResolver, parseResolveRule } from '../../../processors/fetcher/dns-resolver.js';
import { HttpClient, type HttpClientOptions } from '../../../processors/fetcher/http-client.js';

/** A server bound to a loopback address that counts the TCP connections it accepts. */
export interface LoopbackServer {
  port: number;
  connections: () => number;
  close: () => Promise<void>;
}

async function listen(server: net.Server, host: string, port = 0): Promise<LoopbackServer> {
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  server.on('connection', (socket: net.Socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => accepted,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export function startHttp(handler: http.RequestListener, host = '127.0.0.1', port = 0): Promise<LoopbackServer> {
  return listen(http.createServer(handler), host, port);
}

export function startTcp(
  onSocket: (socket: net.Socket) => void,
  host = '127.0.0.1',
  port = 0,
): Promise<LoopbackServer> {
  return listen(net.createServer(onSocket), host, port);
}

/**
 * A client that can only reach 127.0.0.1: `rules` are `--resolve` values and system DNS is off,
 * so no name used in a test ever produces a DNS query.
 */
export function loopbackClient(
  options: Partial<HttpClientOptions> & { rules?: string[]; allow?: string[] } = {},
): HttpClient {
  const { rules = [], allow = ['127.0.0.1/32'], ...rest } = options;
  return new HttpClient({
    userAgent: 'crawlstream-test/1.0 (+http://crawler.test/)',
    resolver: new CachingDnsResolver({ rules: rules.map(parseResolveRule), systemDns: false }),
    guard: new AddressGuard(allow.map(parseCidr)),
    ...rest,
  });
}
