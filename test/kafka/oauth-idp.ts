import { createServer, type Server } from 'node:http';
import { createPrivateKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';

/** What the test identity provider was asked: one entry per token request. */
export interface TokenRequest {
  readonly clientId: string | undefined;
  readonly grantType: string | null;
  readonly scope: string | null;
  readonly status: number;
}

export interface TestIdp {
  /** The token endpoint, http://127.0.0.1:<port>/token. */
  readonly tokenUrl: string;
  readonly requests: TokenRequest[];
  close(): Promise<void>;
}

/**
 * An OAuth 2 token endpoint on loopback, as the broker of scripts/kafka/start.sh expects its
 * tokens: RS256 JWTs with kid `crawlstream-test`, issuer `crawlstream-test-idp`, audience
 * `crawlstream-kafka`, subject the client id. `keyFile` is the broker's trusted signer
 * (CRAWLSTREAM_SECURE_OAUTH_KEY); `foreignKey` signs with a key the broker does not know.
 * Answers 401 `invalid_client` to a client id or secret not in `clients`.
 */
export async function startTestIdp(options: {
  keyFile: string;
  clients: Record<string, string>;
  lifetimeSeconds?: number;
  foreignKey?: boolean;
}): Promise<TestIdp> {
  const key: KeyObject = options.foreignKey
    ? generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
    : createPrivateKey(readFileSync(options.keyFile));
  const lifetime = options.lifetimeSeconds ?? 300;
  const requests: TokenRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const [id, secret] = basic === undefined ? [] : Buffer.from(basic, 'base64').toString('utf8').split(':');
      const clientId = id === undefined ? undefined : decodeURIComponent(id);
      const known =
        req.method === 'POST' &&
        clientId !== undefined &&
        secret !== undefined &&
        options.clients[clientId] === decodeURIComponent(secret);
      const answer = (status: number, body: object): void => {
        requests.push({ clientId, grantType: form.get('grant_type'), scope: form.get('scope'), status });
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      };
      if (!known) return answer(401, { error: 'invalid_client', error_description: 'unknown client or wrong secret' });
      if (form.get('grant_type') !== 'client_credentials') return answer(400, { error: 'unsupported_grant_type' });
      const now = Math.floor(Date.now() / 1000);
      const part = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
      const signed = `${part({ alg: 'RS256', typ: 'JWT', kid: 'crawlstream-test' })}.${part({
        iss: 'crawlstream-test-idp',
        aud: 'crawlstream-kafka',
        sub: clientId,
        iat: now,
        exp: now + lifetime,
        ...(form.get('scope') !== null ? { scope: form.get('scope') } : {}),
      })}`;
      const jwt = `${signed}.${sign('sha256', Buffer.from(signed), key).toString('base64url')}`;
      answer(200, { access_token: jwt, token_type: 'Bearer', expires_in: lifetime });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    tokenUrl: `http://127.0.0.1:${port}/token`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
