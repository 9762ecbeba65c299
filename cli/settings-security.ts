import type { Setting } from './setting.js';

/**
 * The settings of a secured cluster (TLS, SASL, registry credentials), part of SETTINGS
 * (settings.ts); `cli/kafka-security-options.ts` validates them together. Secrets are never
 * settings: they come from files or CRAWLSTREAM_*_PASSWORD variables.
 */
export const SECURITY_SETTINGS: readonly Setting[] = [
  { name: 'kafka-tls', kind: 'bool', help: 'run: connect to the brokers over TLS', commands: ['run'] },
  {
    name: 'kafka-ca',
    kind: 'string',
    arg: 'FILE',
    help: "run: PEM CA certificate(s) that sign the brokers' certificates (with --kafka-tls; default: system CAs)",
    commands: ['run'],
  },
  {
    name: 'kafka-cert',
    kind: 'string',
    arg: 'FILE',
    help: 'run: PEM client certificate for mutual TLS (with --kafka-tls and --kafka-key)',
    commands: ['run'],
  },
  {
    name: 'kafka-key',
    kind: 'string',
    arg: 'FILE',
    help: 'run: PEM private key of --kafka-cert',
    commands: ['run'],
  },
  {
    name: 'kafka-sasl-mechanism',
    kind: 'string',
    arg: 'M',
    values: ['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer'],
    help: 'run: SASL authentication to the brokers: plain, scram-sha-256, scram-sha-512 or oauthbearer',
    commands: ['run'],
  },
  {
    name: 'kafka-sasl-username',
    kind: 'string',
    arg: 'USER',
    help: 'run: SASL username (with --kafka-sasl-mechanism; oauthbearer: the OAuth client id)',
    commands: ['run'],
  },
  {
    name: 'kafka-sasl-password-file',
    kind: 'string',
    arg: 'FILE',
    help: 'run: file holding the SASL password (or the password itself in CRAWLSTREAM_KAFKA_SASL_PASSWORD; never a flag; oauthbearer: the client secret)',
    commands: ['run'],
  },
  {
    name: 'kafka-oauth-token-url',
    kind: 'string',
    arg: 'URL',
    help: 'run: the OAuth 2 token endpoint that issues bearer tokens (client-credentials grant) for --kafka-sasl-mechanism oauthbearer',
    commands: ['run'],
  },
  {
    name: 'kafka-oauth-scope',
    kind: 'string',
    arg: 'S',
    help: 'run: space-separated scopes to ask the token endpoint for (default: its default scope)',
    commands: ['run'],
  },
  {
    name: 'registry-username',
    kind: 'string',
    arg: 'USER',
    help: 'run: HTTP basic username of the schema registry',
    commands: ['run'],
  },
  {
    name: 'registry-password-file',
    kind: 'string',
    arg: 'FILE',
    help: 'run: file holding the registry password (or the password itself in CRAWLSTREAM_REGISTRY_PASSWORD)',
    commands: ['run'],
  },
];
