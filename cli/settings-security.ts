import type { Setting, SettingCommand } from './setting.js';

/** The commands that talk to a Kafka cluster, and those of them that also use the schema registry. */
export const KAFKA_COMMANDS: readonly SettingCommand[] = ['run', 'inject', 'control', 'topics', 'replay', 'reparse'];
export const REGISTRY_COMMANDS: readonly SettingCommand[] = ['run', 'inject', 'control', 'reparse'];

/**
 * The settings of a secured cluster (TLS, SASL, registry credentials), part of SETTINGS
 * (settings.ts); `cli/kafka-security-options.ts` validates them together. Secrets are never
 * settings: they come from files or CRAWLSTREAM_*_PASSWORD variables.
 */
export const SECURITY_SETTINGS: readonly Setting[] = [
  { name: 'kafka-tls', kind: 'bool', help: 'connect to the brokers over TLS', commands: KAFKA_COMMANDS },
  {
    name: 'kafka-ca',
    kind: 'string',
    arg: 'FILE',
    help: "PEM CA certificate(s) that sign the brokers' certificates (with --kafka-tls; default: system CAs)",
    commands: KAFKA_COMMANDS,
  },
  {
    name: 'kafka-cert',
    kind: 'string',
    arg: 'FILE',
    help: 'PEM client certificate for mutual TLS (with --kafka-tls and --kafka-key)',
    commands: KAFKA_COMMANDS,
  },
  {
    name: 'kafka-key',
    kind: 'string',
    arg: 'FILE',
    help: 'PEM private key of --kafka-cert',
    commands: KAFKA_COMMANDS,
  },
  {
    name: 'kafka-sasl-mechanism',
    kind: 'string',
    arg: 'M',
    values: ['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer'],
    help: 'SASL authentication to the brokers: plain, scram-sha-256, scram-sha-512 or oauthbearer',
    commands: KAFKA_COMMANDS,
  },
  {
    name: 'kafka-sasl-username',
    kind: 'string',
    arg: 'USER',
    help: 'SASL username (with --kafka-sasl-mechanism; oauthbearer: the OAuth client id)',
    commands: KAFKA_COMMANDS,
  },
  {
    name: 'kafka-sasl-password-file',
    kind: 'string',
    arg: 'FILE',
    help: 'file holding the SASL password (or the password itself in CRAWLSTREAM_KAFKA_SASL_PASSWORD; never a flag; oauthbearer: the client secret)',
    commands: KAFKA_COMMANDS,
  },
  {
    name: 'kafka-oauth-token-url',
    kind: 'string',
    arg: 'URL',
    help: 'the OAuth 2 token endpoint that issues bearer tokens (client-credentials grant) for --kafka-sasl-mechanism oauthbearer',
    commands: KAFKA_COMMANDS,
  },
  {
    name: 'kafka-oauth-scope',
    kind: 'string',
    arg: 'S',
    help: 'space-separated scopes to ask the token endpoint for (default: its default scope)',
    commands: KAFKA_COMMANDS,
  },
  {
    name: 'registry-username',
    kind: 'string',
    arg: 'USER',
    help: 'HTTP basic username of the schema registry',
    commands: REGISTRY_COMMANDS,
  },
  {
    name: 'registry-password-file',
    kind: 'string',
    arg: 'FILE',
    help: 'file holding the registry password (or the password itself in CRAWLSTREAM_REGISTRY_PASSWORD)',
    commands: REGISTRY_COMMANDS,
  },
];
