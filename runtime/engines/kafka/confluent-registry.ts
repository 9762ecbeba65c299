import confluent from '@kafkajs/confluent-schema-registry';
import { CrawlError } from '../../../core/errors.js';
import type { SchemaRegistry } from '../../../schemas/index.js';
import type { RegistryAuth } from './kafka-security.js';

const { SchemaRegistry: RegistryClient, SchemaType } = confluent;

/**
 * A Confluent-compatible schema registry (Apicurio's `/apis/ccompat/v7`, or Confluent's own)
 * through @kafkajs/confluent-schema-registry. `register` also sets the subject's compatibility
 * to BACKWARD (records evolve only by fields with defaults: a new reader reads every older
 * record), so the registry itself refuses an incompatible schema; it also loads the subject's
 * earlier versions, so `versions()` can answer synchronously as `buildSerdes` needs.
 */
export class ConfluentSchemaRegistry implements SchemaRegistry {
  private readonly client: InstanceType<typeof RegistryClient>;
  private readonly known = new Map<string, { id: number; schema: string }[]>();
  /** Headers of the requests made here directly (the client library sends `auth` itself). */
  private readonly headers: Record<string, string>;

  /** `auth`: basic credentials, for a registry behind authentication (Confluent Cloud, a proxy). */
  constructor(
    readonly url: string,
    auth?: RegistryAuth,
  ) {
    if (!/^https?:\/\/[^\s]+$/.test(url))
      throw new CrawlError('CS_INVALID_OPTION', `--registry must be an http(s) URL, got ${JSON.stringify(url)}`);
    if (auth !== undefined && (auth.username === '' || auth.password === '' || auth.username.includes(':')))
      throw new CrawlError(
        'CS_INVALID_OPTION',
        'registry credentials need a username without ":" (--registry-username) and a non-empty password',
      );
    this.client = new RegistryClient({
      host: url.replace(/\/+$/, ''),
      retry: { retries: 3 },
      ...(auth !== undefined ? { auth: { username: auth.username, password: auth.password } } : {}),
    });
    this.headers =
      auth === undefined
        ? {}
        : { authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` };
  }

  async register(subject: string, schemaText: string): Promise<number> {
    let id: number;
    try {
      ({ id } = await this.client.register({ type: SchemaType.AVRO, schema: schemaText }, { subject }));
    } catch (err) {
      throw new CrawlError('CS_SCHEMA', `registry ${this.url} refused ${subject}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    // after the first version exists (a registry may know no config for a subject it has not seen)
    await this.requireBackward(subject);
    this.known.set(subject, await this.loadVersions(subject));
    return id;
  }

  async schemaById(id: number): Promise<string> {
    try {
      return JSON.stringify(await this.client.getSchema(id));
    } catch (err) {
      throw new CrawlError('CS_SCHEMA', `schema id ${id} is unknown to ${this.url}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  /** Sets the subject's compatibility level to BACKWARD (idempotent). */
  private async requireBackward(subject: string): Promise<void> {
    const url = `${this.url.replace(/\/+$/, '')}/config/${encodeURIComponent(subject)}`;
    const res = await fetch(url, {
      method: 'PUT',
      headers: { ...this.headers, 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ compatibility: 'BACKWARD' }),
    });
    if (!res.ok)
      throw new CrawlError(
        'CS_SCHEMA',
        `registry ${this.url} refused compatibility BACKWARD for ${subject}: ${res.status}`,
      );
  }

  /** Every version registered under the subject, as of the last `register` of it. */
  versions(subject: string): { id: number; schema: string }[] {
    return this.known.get(subject) ?? [];
  }

  private async loadVersions(subject: string): Promise<{ id: number; schema: string }[]> {
    const base = `${this.url.replace(/\/+$/, '')}/subjects/${encodeURIComponent(subject)}/versions`;
    const res = await fetch(base, { headers: this.headers });
    if (!res.ok) throw new CrawlError('CS_SCHEMA', `GET ${base} answered ${res.status}`);
    const versions = (await res.json()) as number[];
    const out: { id: number; schema: string }[] = [];
    for (const v of versions) {
      const r = await fetch(`${base}/${v}`, { headers: this.headers });
      if (!r.ok) throw new CrawlError('CS_SCHEMA', `GET ${base}/${v} answered ${r.status}`);
      const body = (await r.json()) as { id: number; schema: string };
      out.push({ id: body.id, schema: body.schema });
    }
    return out;
  }
}
