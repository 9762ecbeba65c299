import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clientCredentialsTokenSource, TokenRequestError } from '../../runtime/engines/kafka/kafka-oauth.js';
import { resolveKafkaSecurity } from '../../runtime/engines/kafka/kafka-security.js';

const URL_ = 'https://idp.example/oauth2/token';
const CREDENTIALS = { tokenUrl: URL_, clientId: 'crawler 1', clientSecret: 's3:cret', scope: 'kafka crawl' };

/** A fetch that answers from `answers` in turn and records each request. */
function fakeFetch(answers: (() => Response | Promise<Response>)[]) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetch = ((url: string, init: RequestInit) => {
    calls.push({ url, init });
    const next = answers.shift();
    if (next === undefined) throw new Error('no more answers');
    return Promise.resolve(next());
  }) as unknown as typeof globalThis.fetch;
  return { fetch, calls };
}

const json = (status: number, body: object) => () =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

function jwt(payload: object): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'RS256' })}.${part(payload)}.sig`;
}

async function rejection(promise: Promise<unknown>): Promise<TokenRequestError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof TokenRequestError, String(err));
    return err;
  }
  assert.fail('resolved');
}

test('asks with the client-credentials grant, the credentials in HTTP basic auth (form-encoded), and the scope', async () => {
  const { fetch, calls } = fakeFetch([json(200, { access_token: 'tok-1', expires_in: 300 })]);
  const source = clientCredentialsTokenSource(CREDENTIALS, { fetch });
  assert.deepEqual(await source(), { value: 'tok-1' });
  assert.equal(calls.length, 1);
  const { url, init } = calls[0]!;
  assert.equal(url, URL_);
  assert.equal(init.method, 'POST');
  const headers = init.headers as Record<string, string>;
  assert.equal(
    Buffer.from(headers['authorization']!.replace(/^Basic /, ''), 'base64').toString(),
    'crawler%201:s3%3Acret',
  );
  assert.equal(headers['content-type'], 'application/x-www-form-urlencoded');
  const form = new URLSearchParams(init.body as string);
  assert.equal(form.get('grant_type'), 'client_credentials');
  assert.equal(form.get('scope'), 'kafka crawl');
});

test('one token serves until 80 % of its lifetime has passed; concurrent callers share one request', async () => {
  let now = 1_000_000;
  const { fetch, calls } = fakeFetch([
    json(200, { access_token: 'tok-1', expires_in: 100 }),
    json(200, { access_token: 'tok-2', expires_in: 100 }),
  ]);
  const source = clientCredentialsTokenSource(CREDENTIALS, { fetch, now: () => now });
  const [a, b, c] = await Promise.all([source(), source(), source()]);
  assert.deepEqual(
    [a, b, c].map((t) => t.value),
    ['tok-1', 'tok-1', 'tok-1'],
  );
  now += 79_999;
  assert.equal((await source()).value, 'tok-1');
  now += 1;
  assert.equal((await source()).value, 'tok-2');
  assert.equal(calls.length, 2);
});

test("without expires_in the lifetime is the JWT's exp; an opaque token is asked for again after a minute", async () => {
  let now = 1_700_000_000_000;
  const exp = now / 1000 + 10;
  const { fetch, calls } = fakeFetch([
    json(200, { access_token: jwt({ sub: 'c', exp }) }),
    json(200, { access_token: 'opaque' }),
    json(200, { access_token: 'opaque-2' }),
  ]);
  const source = clientCredentialsTokenSource(CREDENTIALS, { fetch, now: () => now });
  await source();
  now += 7_999;
  await source();
  assert.equal(calls.length, 1, 'still within 80 % of the 10 s the exp claim gives');
  now += 1;
  assert.equal((await source()).value, 'opaque');
  now += 47_999;
  assert.equal((await source()).value, 'opaque');
  now += 1;
  assert.equal((await source()).value, 'opaque-2');
});

test("a refusal names the endpoint, the status and the provider's error, never the secret; it is not cached", async () => {
  const { fetch, calls } = fakeFetch([
    json(401, { error: 'invalid_client', error_description: 'bad secret' }),
    json(200, { access_token: 'tok', expires_in: 60 }),
  ]);
  const source = clientCredentialsTokenSource(CREDENTIALS, { fetch });
  const err = await rejection(source());
  assert.equal(err.code, 'CS_KAFKA');
  assert.equal(err.message, `OAuth token endpoint ${URL_}: HTTP 401 (invalid_client: bad secret)`);
  assert.equal(err.transient, false);
  assert.ok(!err.message.includes('s3:cret') && !err.message.includes('s3%3Acret'));
  assert.equal((await source()).value, 'tok', 'the next call asks again');
  assert.equal(calls.length, 2);
});

test('transient and permanent failures are told apart', async () => {
  const cases: [() => Response | Promise<Response>, string, boolean][] = [
    [json(503, {}), 'HTTP 503', true],
    [json(429, { error: 'slow_down' }), 'HTTP 429 (slow_down)', true],
    [json(400, { error: 'invalid_scope' }), 'HTTP 400 (invalid_scope)', false],
    [() => new Response('<html>login</html>', { status: 200 }), 'the answer holds no access_token', false],
    [json(200, { token_type: 'Bearer' }), 'the answer holds no access_token', false],
    [
      () => Promise.reject(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } })),
      'no answer: ECONNREFUSED',
      true,
    ],
    [() => Promise.reject(new DOMException('timed out', 'TimeoutError')), 'no answer: timed out', true],
  ];
  for (const [answer, what, transient] of cases) {
    const { fetch } = fakeFetch([answer]);
    const err = await rejection(clientCredentialsTokenSource(CREDENTIALS, { fetch })());
    assert.equal(err.message, `OAuth token endpoint ${URL_}: ${what}`);
    assert.equal(err.transient, transient, what);
  }
});

test('resolveKafkaSecurity validates OAUTHBEARER settings eagerly, with precise messages', () => {
  const base = { mechanism: 'oauthbearer' as const, tokenUrl: URL_, clientId: 'c', clientSecret: 's' };
  const refuses = (sasl: object, message: string) =>
    assert.throws(
      () => resolveKafkaSecurity({ sasl: { ...base, ...sasl } as typeof base }),
      (err: Error & { code?: string }) => err.code === 'CS_INVALID_OPTION' && err.message === message,
    );
  refuses(
    { tokenUrl: 'ftp://idp/token' },
    'Kafka SASL oauthbearer needs an http(s) token endpoint (--kafka-oauth-token-url), got "ftp://idp/token"',
  );
  refuses(
    { tokenUrl: 'not a url' },
    'Kafka SASL oauthbearer needs an http(s) token endpoint (--kafka-oauth-token-url), got "not a url"',
  );
  refuses(
    { tokenUrl: 'https://u:p@idp/token' },
    'the OAuth token endpoint URL must not hold credentials (give the client id and secret instead)',
  );
  refuses({ clientId: '' }, 'Kafka SASL oauthbearer needs a client id (--kafka-sasl-username)');
  refuses({ clientSecret: '' }, 'Kafka SASL oauthbearer needs a non-empty client secret');
  refuses({ scope: 'a  b' }, 'Kafka OAuth scope must be space-separated scope tokens (RFC 6749 §3.3), got "a  b"');
  const resolved = resolveKafkaSecurity({ sasl: { ...base, scope: 'kafka' } });
  assert.equal(resolved.sasl?.mechanism, 'oauthbearer');
  assert.equal(typeof (resolved.sasl as { oauthBearerProvider?: unknown }).oauthBearerProvider, 'function');
});
