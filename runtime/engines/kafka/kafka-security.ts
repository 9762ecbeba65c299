import { readFileSync } from 'node:fs';
import { CrawlError } from '../../../core/errors.js';
import { clientCredentialsTokenSource, type BearerToken, type OAuthClientCredentials } from './kafka-oauth.js';

/** The SASL mechanisms a Kafka connection may authenticate with (OAUTHBEARER's exchange is ours: kafka-oauthbearer.ts). */
export const SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer'] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];
/** The mechanisms that send a username and a password. */
export type PasswordMechanism = Exclude<SaslMechanism, 'oauthbearer'>;

/** SASL PLAIN or SCRAM: a username and its password. */
export interface PasswordSasl {
  readonly mechanism: PasswordMechanism;
  readonly username: string;
  readonly password: string;
}

/** SASL OAUTHBEARER: a bearer token from an OAuth 2 token endpoint (client-credentials grant). */
export interface OAuthBearerSasl extends OAuthClientCredentials {
  readonly mechanism: 'oauthbearer';
}

/**
 * How a KafkaPort connects to its brokers; the default (`{}`) is PLAINTEXT without
 * authentication. Files are paths, read once when the port is constructed.
 */
export interface KafkaSecurityOptions {
  /** Connect over TLS; the broker's certificate is verified against `caFile`, or else the system CAs. */
  readonly tls?: boolean;
  /** PEM file of the CA(s) that sign the brokers' certificates; needs `tls`. */
  readonly caFile?: string;
  /** PEM client certificate (mutual TLS); needs `tls` and `keyFile`. */
  readonly certFile?: string;
  /** PEM private key of `certFile`; needs `tls` and `certFile`. */
  readonly keyFile?: string;
  /** SASL authentication (over TLS: SASL_SSL; without: SASL_PLAINTEXT). */
  readonly sasl?: PasswordSasl | OAuthBearerSasl;
}

/** HTTP basic credentials of a schema registry that requires them (sent on every request). */
export interface RegistryAuth {
  readonly username: string;
  readonly password: string;
}

/** Everything a secured deployment needs to reach its cluster: the brokers' TLS/SASL and the registry's credentials. */
export interface ClusterSecurity {
  readonly kafka?: KafkaSecurityOptions;
  readonly registry?: RegistryAuth;
}

/** The TLS part of a resolved configuration: node `tls.connect` options, certificates as PEM text. */
export interface ResolvedTls {
  readonly rejectUnauthorized: true;
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
}

/** `KafkaSecurityOptions` with files read: the shape of the client's `ssl` and `sasl` settings. */
export interface ResolvedKafkaSecurity {
  readonly ssl?: ResolvedTls;
  readonly sasl?: ResolvedSasl;
}

/** One object type per mechanism, as the client declares its `sasl` setting. */
export type ResolvedSasl =
  | {
      [M in PasswordMechanism]: { mechanism: M; username: string; password: string };
    }[PasswordMechanism]
  | { mechanism: 'oauthbearer'; oauthBearerProvider: () => Promise<BearerToken> };

/**
 * Validates `options` and reads their files. Throws CrawlError CS_INVALID_OPTION naming the
 * first problem: a file without `tls`, a certificate without its key (or the reverse), an
 * unknown mechanism, an empty username or password, a file that cannot be read or holds no PEM.
 */
export function resolveKafkaSecurity(options: KafkaSecurityOptions = {}): ResolvedKafkaSecurity {
  const { tls = false, caFile, certFile, keyFile, sasl } = options;
  for (const [name, file] of [
    ['CA file', caFile],
    ['client certificate', certFile],
    ['client key', keyFile],
  ] as const)
    if (file !== undefined && !tls) invalid(`Kafka ${name} ${file} given without TLS (--kafka-tls)`);
  if ((certFile === undefined) !== (keyFile === undefined))
    invalid(
      certFile === undefined
        ? `Kafka client key ${keyFile} given without its certificate (--kafka-cert)`
        : `Kafka client certificate ${certFile} given without its key (--kafka-key)`,
    );
  if (sasl !== undefined) {
    if (!(SASL_MECHANISMS as readonly string[]).includes(sasl.mechanism))
      invalid(
        `Kafka SASL mechanism must be one of ${SASL_MECHANISMS.join(', ')}, got ${JSON.stringify(sasl.mechanism)}`,
      );
    if (sasl.mechanism === 'oauthbearer') validateOAuth(sasl);
    else {
      if (sasl.username === '') invalid(`Kafka SASL ${sasl.mechanism} needs a username (--kafka-sasl-username)`);
      if (sasl.password === '') invalid(`Kafka SASL ${sasl.mechanism} needs a non-empty password`);
    }
  }
  return {
    ...(tls
      ? {
          ssl: {
            rejectUnauthorized: true,
            ...(caFile !== undefined ? { ca: readPem(caFile, 'CA file', 'CERTIFICATE') } : {}),
            ...(certFile !== undefined ? { cert: readPem(certFile, 'client certificate', 'CERTIFICATE') } : {}),
            ...(keyFile !== undefined ? { key: readPem(keyFile, 'client key', 'PRIVATE KEY') } : {}),
          },
        }
      : {}),
    ...(sasl !== undefined ? { sasl: resolveSasl(sasl) } : {}),
  };
}

function resolveSasl(sasl: PasswordSasl | OAuthBearerSasl): ResolvedSasl {
  if (sasl.mechanism !== 'oauthbearer') return { ...sasl } as ResolvedSasl;
  const { tokenUrl, clientId, clientSecret, scope } = sasl;
  return {
    mechanism: 'oauthbearer',
    oauthBearerProvider: clientCredentialsTokenSource({
      tokenUrl,
      clientId,
      clientSecret,
      ...(scope !== undefined ? { scope } : {}),
    }),
  };
}

function validateOAuth(sasl: OAuthBearerSasl): void {
  let url: URL | undefined;
  try {
    url = new URL(sasl.tokenUrl);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:'))
    invalid(
      `Kafka SASL oauthbearer needs an http(s) token endpoint (--kafka-oauth-token-url), got ${JSON.stringify(sasl.tokenUrl)}`,
    );
  if (url.username !== '' || url.password !== '')
    invalid('the OAuth token endpoint URL must not hold credentials (give the client id and secret instead)');
  if (sasl.clientId === '') invalid('Kafka SASL oauthbearer needs a client id (--kafka-sasl-username)');
  if (sasl.clientSecret === '') invalid('Kafka SASL oauthbearer needs a non-empty client secret');
  if (sasl.scope !== undefined && !/^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/.test(sasl.scope))
    invalid(
      `Kafka OAuth scope must be space-separated scope tokens (RFC 6749 §3.3), got ${JSON.stringify(sasl.scope)}`,
    );
}

/** The text of a PEM file that holds at least one `-----BEGIN ...<label>-----` block. */
function readPem(file: string, what: string, label: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return invalid(`Kafka ${what} ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  if (!new RegExp(`-----BEGIN [A-Z ]*${label}-----`).test(text)) invalid(`Kafka ${what} ${file} holds no PEM ${label}`);
  return text;
}

function invalid(message: string): never {
  throw new CrawlError('CS_INVALID_OPTION', message);
}
