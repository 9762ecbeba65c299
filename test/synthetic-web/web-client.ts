import { request, type Agent, type IncomingHttpHeaders } from 'node:http';
import type { SyntheticWeb } from '../../synthetic-web/synthetic-web.js';

export interface Fetched {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  reusedSocket: boolean;
}

/** GET (or `method`) `path` from the server at 127.0.0.1 with `Host: host:port`. */
export function get(
  web: SyntheticWeb,
  host: string,
  path = '/',
  init: { headers?: Record<string, string>; agent?: Agent; method?: string } = {},
): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: web.port,
        path,
        method: init.method ?? 'GET',
        agent: init.agent ?? false,
        headers: { host: `${host}:${web.port}`, ...init.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            reusedSocket: req.reusedSocket,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}
