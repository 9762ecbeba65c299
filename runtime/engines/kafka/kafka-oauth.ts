import { CrawlError } from '../../../core/errors.js';

/** Where and as whom a client asks for OAuth 2 access tokens (RFC 6749 §4.4, client credentials). */
export interface OAuthClientCredentials {
  /** The identity provider's token endpoint, http: or https:. */
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Space-separated scopes to ask for; default: the provider's default scope. */
  readonly scope?: string;
}

/** A bearer token as kafkajs' `oauthBearerProvider` returns it. */
export interface BearerToken {
  readonly value: string;
}

/** The seam for tests: a `fetch` and a clock. */
export interface TokenSourceDeps {
  readonly fetch?: typeof fetch;
  readonly now?: () => number;
  /** How long one token request may take; default 15 s. */
  readonly timeoutMs?: number;
}

/**
 * A token request that failed. `transient`: worth asking again (no answer, a timeout, HTTP 5xx or
 * 429); otherwise the endpoint refused these credentials or answered something that is no token,
 * and asking again with the same settings gets the same.
 */
export class TokenRequestError extends CrawlError {
  constructor(
    message: string,
    readonly transient: boolean,
  ) {
    super('CS_KAFKA', message);
    this.name = 'TokenRequestError';
  }
}

/** A token whose lifetime is not told (no `expires_in`, no JWT `exp`) is asked for again after this. */
const UNKNOWN_LIFETIME_MS = 60_000;
/** A token is renewed once this share of its lifetime has passed, as Kafka's Java login refresher does. */
const RENEW_AT = 0.8;

/**
 * An `oauthBearerProvider` for kafkajs' SASL OAUTHBEARER: asks `credentials.tokenUrl` for a token
 * with the client-credentials grant (client id and secret in HTTP basic auth, as Kafka's own
 * client sends them) and hands the same token to every connection until 80 % of its lifetime has
 * passed; concurrent callers share one request. Never caches a failure: each failed request
 * rejects with a TokenRequestError (CS_KAFKA) naming the endpoint and its answer (status and the
 * provider's `error`/`error_description`, never the secret), and the next call asks again.
 */
export function clientCredentialsTokenSource(
  credentials: OAuthClientCredentials,
  deps: TokenSourceDeps = {},
): () => Promise<BearerToken> {
  const doFetch = deps.fetch ?? fetch;
  const now = deps.now ?? Date.now;
  const timeoutMs = deps.timeoutMs ?? 15_000;
  let cached: { token: BearerToken; renewAt: number } | undefined;
  let pending: Promise<BearerToken> | undefined;

  const request = async (): Promise<BearerToken> => {
    const asked = now();
    const body = new URLSearchParams({ grant_type: 'client_credentials' });
    if (credentials.scope !== undefined) body.set('scope', credentials.scope);
    const basic = Buffer.from(
      `${encodeURIComponent(credentials.clientId)}:${encodeURIComponent(credentials.clientSecret)}`,
    ).toString('base64');
    let res: Response;
    let text: string;
    try {
      res = await doFetch(credentials.tokenUrl, {
        method: 'POST',
        headers: {
          authorization: `Basic ${basic}`,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: body.toString(),
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await res.text();
    } catch (err) {
      throw failure(credentials.tokenUrl, `no answer: ${causeOf(err)}`, true);
    }
    let json: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed !== null && typeof parsed === 'object') json = parsed as Record<string, unknown>;
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const said = [json?.error, json?.error_description].filter((s) => typeof s === 'string').join(': ');
      const transient = res.status >= 500 || res.status === 429;
      throw failure(credentials.tokenUrl, `HTTP ${res.status}${said !== '' ? ` (${said})` : ''}`, transient);
    }
    const value = json?.access_token;
    if (typeof value !== 'string' || value === '')
      throw failure(credentials.tokenUrl, 'the answer holds no access_token', false);
    const lifetimeMs = lifetimeOf(json?.expires_in, value, asked);
    cached = { token: { value }, renewAt: asked + lifetimeMs * RENEW_AT };
    return cached.token;
  };

  return () => {
    if (cached !== undefined && now() < cached.renewAt) return Promise.resolve(cached.token);
    pending ??= request().finally(() => {
      pending = undefined;
    });
    return pending;
  };
}

/** From `expires_in` (seconds), else the JWT's `exp`, else UNKNOWN_LIFETIME_MS; never below 1 s. */
function lifetimeOf(expiresIn: unknown, token: string, asked: number): number {
  if (typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn > 0) return expiresIn * 1000;
  if (typeof expiresIn === 'string' && /^\d+$/.test(expiresIn)) return Math.max(1000, Number(expiresIn) * 1000);
  const payload = token.split('.')[1];
  if (payload !== undefined) {
    try {
      const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
      if (typeof exp === 'number' && Number.isFinite(exp)) return Math.max(1000, exp * 1000 - asked);
    } catch {
      // not a JWT: an opaque token
    }
  }
  return UNKNOWN_LIFETIME_MS;
}

function failure(url: string, what: string, transient: boolean): TokenRequestError {
  return new TokenRequestError(`OAuth token endpoint ${url}: ${what}`, transient);
}

function causeOf(err: unknown): string {
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError') return 'timed out';
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}
