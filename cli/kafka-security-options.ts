import { readFileSync } from 'node:fs';
import { InvalidOptionError } from '../core/errors.js';
import {
  resolveKafkaSecurity,
  SASL_MECHANISMS,
  type ClusterSecurity,
  type KafkaSecurityOptions,
  type PasswordMechanism,
  type RegistryAuth,
} from '../runtime/engines/kafka/kafka-security.js';
import type { ResolvedSettings } from './config-sources.js';

/** Passwords come from a file or from these variables, never from a flag (a flag shows in `ps`). */
export const KAFKA_SASL_PASSWORD_ENV = 'CRAWLSTREAM_KAFKA_SASL_PASSWORD';
export const REGISTRY_PASSWORD_ENV = 'CRAWLSTREAM_REGISTRY_PASSWORD';

type Flag =
  | 'kafka-tls'
  | 'kafka-ca'
  | 'kafka-cert'
  | 'kafka-key'
  | 'kafka-sasl-mechanism'
  | 'kafka-sasl-username'
  | 'kafka-sasl-password-file'
  | 'kafka-oauth-token-url'
  | 'kafka-oauth-scope'
  | 'registry-username'
  | 'registry-password-file';

/**
 * The security of a command that talks to Kafka (run, inject, control, topics, replay), from its
 * resolved settings (defaults < file < environment < flags; cli/settings-security.ts).
 */
export function securityFromSettings(
  resolved: ResolvedSettings,
  env: NodeJS.ProcessEnv = process.env,
): ClusterSecurity {
  return clusterSecurity((name) => resolved.values.get(name)?.value as string | boolean | undefined, env);
}

/**
 * Validates the security settings and reads their files, eagerly: every problem is a
 * CS_INVALID_OPTION naming the flag, e.g. a username without a mechanism, a mechanism without
 * a password, a password both in a file and in the environment, an unreadable or empty file.
 */
export function clusterSecurity(
  get: (name: Flag) => string | boolean | undefined,
  env: NodeJS.ProcessEnv,
): ClusterSecurity {
  const str = (name: Flag): string | undefined => get(name) as string | undefined;
  const kafka: KafkaSecurityOptions = {
    ...(get('kafka-tls') === true ? { tls: true } : {}),
    ...optional('caFile', str('kafka-ca')),
    ...optional('certFile', str('kafka-cert')),
    ...optional('keyFile', str('kafka-key')),
    ...saslOf(
      str('kafka-sasl-mechanism'),
      str('kafka-sasl-username'),
      str('kafka-sasl-password-file'),
      { tokenUrl: str('kafka-oauth-token-url'), scope: str('kafka-oauth-scope') },
      env,
    ),
  };
  resolveKafkaSecurity(kafka); // validates now and reads the files once, so a bad path fails before any work
  const registry = registryAuthOf(str('registry-username'), str('registry-password-file'), env);
  return {
    ...(Object.keys(kafka).length > 0 ? { kafka } : {}),
    ...(registry !== undefined ? { registry } : {}),
  };
}

function saslOf(
  mechanism: string | undefined,
  username: string | undefined,
  passwordFile: string | undefined,
  oauth: { tokenUrl: string | undefined; scope: string | undefined },
  env: NodeJS.ProcessEnv,
): Pick<KafkaSecurityOptions, 'sasl'> {
  const envPassword = env[KAFKA_SASL_PASSWORD_ENV];
  if (mechanism !== 'oauthbearer') {
    if (oauth.tokenUrl !== undefined)
      throw new InvalidOptionError('--kafka-oauth-token-url needs --kafka-sasl-mechanism oauthbearer');
    if (oauth.scope !== undefined)
      throw new InvalidOptionError('--kafka-oauth-scope needs --kafka-sasl-mechanism oauthbearer');
  }
  if (mechanism === undefined) {
    if (username !== undefined) throw new InvalidOptionError('--kafka-sasl-username needs --kafka-sasl-mechanism');
    if (passwordFile !== undefined)
      throw new InvalidOptionError('--kafka-sasl-password-file needs --kafka-sasl-mechanism');
    return {};
  }
  if (!(SASL_MECHANISMS as readonly string[]).includes(mechanism))
    throw new InvalidOptionError(
      `--kafka-sasl-mechanism must be one of ${SASL_MECHANISMS.join(', ')}, got ${JSON.stringify(mechanism)}`,
    );
  if (username === undefined || username === '')
    throw new InvalidOptionError(`--kafka-sasl-mechanism ${mechanism} needs --kafka-sasl-username`);
  const password = passwordOf(
    `--kafka-sasl-mechanism ${mechanism}`,
    '--kafka-sasl-password-file',
    passwordFile,
    KAFKA_SASL_PASSWORD_ENV,
    envPassword,
  );
  if (mechanism !== 'oauthbearer') return { sasl: { mechanism: mechanism as PasswordMechanism, username, password } };
  if (oauth.tokenUrl === undefined || oauth.tokenUrl === '')
    throw new InvalidOptionError('--kafka-sasl-mechanism oauthbearer needs --kafka-oauth-token-url');
  return {
    sasl: {
      mechanism,
      tokenUrl: oauth.tokenUrl,
      clientId: username,
      clientSecret: password,
      ...(oauth.scope !== undefined ? { scope: oauth.scope } : {}),
    },
  };
}

function registryAuthOf(
  username: string | undefined,
  passwordFile: string | undefined,
  env: NodeJS.ProcessEnv,
): RegistryAuth | undefined {
  if (username === undefined) {
    if (passwordFile !== undefined) throw new InvalidOptionError('--registry-password-file needs --registry-username');
    return undefined;
  }
  if (username === '' || username.includes(':'))
    throw new InvalidOptionError(
      `--registry-username must be non-empty and without ":", got ${JSON.stringify(username)}`,
    );
  const password = passwordOf(
    '--registry-username',
    '--registry-password-file',
    passwordFile,
    REGISTRY_PASSWORD_ENV,
    env[REGISTRY_PASSWORD_ENV],
  );
  return { username, password };
}

/** The password from its file (one trailing newline dropped) or its variable: exactly one, non-empty. */
function passwordOf(
  needer: string,
  flag: string,
  file: string | undefined,
  envVar: string,
  fromEnv: string | undefined,
): string {
  if (file !== undefined && fromEnv !== undefined && fromEnv !== '')
    throw new InvalidOptionError(`give ${flag} or ${envVar}, not both`);
  if (file === undefined) {
    if (fromEnv === undefined || fromEnv === '')
      throw new InvalidOptionError(`${needer} needs a password: ${flag} FILE or ${envVar}`);
    return fromEnv;
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new InvalidOptionError(
      `${flag} ${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
    );
  }
  const password = text.replace(/\r?\n$/, '');
  if (password === '') throw new InvalidOptionError(`${flag} ${file} is empty`);
  return password;
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}
