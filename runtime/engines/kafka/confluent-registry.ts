import confluent from '@kafkajs/confluent-schema-registry';
import { CrawlError } from '../../../core/errors.js';
import type { SchemaRegistry } from '../../../schemas/index.js';
import type { RegistryAuth } from './kafka-security.js';

const { SchemaRegistry: RegistryClient, SchemaType, COMPATIBILITY } = confluent;

/**
 * The compatibility level of every subject the crawler registers: a new version must read every
 * older record and be read by every older reader, so during a rolling upgrade neither the old
 * instances nor the new ones take the other's records for corrupt (docs/SCHEMAS.md).
 */
export const SUBJECT_COMPATIBILITY = COMPATIBILITY.FULL_TRANSITIVE;

/** How often a compatibility PUT that met a concurrent one (409) is made before it is refused. */
const CONFLICT_ATTEMPTS = 5;

/**
 * A Confluent-compatible schema registry (Apicurio's `/apis/ccompat/v7`, or Confluent's own)
 * through @kafkajs/confluent-schema-registry. `register` sets the subject's compatibility to
 * {@link SUBJECT_COMPATIBILITY} before it registers, so the registry itself refuses a schema that
 * is not such an evolution of every earlier version (`CS_SCHEMA`); it also loads the subject's
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
    // before registering, so this very version is checked at the level (a subject registered
    // BACKWARD by an older crawler is raised first); a registry that keeps no config for a subject
    // it has not seen gets it after the first version, which has nothing to be checked against
    const levelSet = await this.requireCompatibility(subject, true);
    let id: number;
    try {
      // the library checks the subject's level against this one and sets it on a new subject
      ({ id } = await this.client.register(
        { type: SchemaType.AVRO, schema: schemaText },
        { subject, compatibility: SUBJECT_COMPATIBILITY },
      ));
    } catch (err) {
      throw new CrawlError('CS_SCHEMA', `registry ${this.url} refused ${subject}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    if (!levelSet) await this.requireCompatibility(subject, false);
    this.known.set(subject, await this.loadVersions(subject));
    return id;
  }

  /** `GET /schemas/ids/{id}`: a 404 is CS_SCHEMA (no such id), any other failure CS_REGISTRY (worth a retry). */
  async schemaById(id: number): Promise<string> {
    const url = `${this.url.replace(/\/+$/, '')}/schemas/ids/${id}`;
    let res: Response;
    try {
      res = await fetch(url, { headers: this.headers, signal: AbortSignal.timeout(10_000) });
    } catch (err) {
      throw new CrawlError(
        'CS_REGISTRY',
        `registry ${this.url} unreachable for schema id ${id}: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
    if (res.status === 404) {
      await res.body?.cancel();
      throw new CrawlError('CS_SCHEMA', `schema id ${id} is unknown to ${this.url}`);
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new CrawlError('CS_REGISTRY', `registry ${this.url} answered ${res.status} for schema id ${id}`);
    }
    const body = (await res.json()) as { schema?: unknown };
    if (typeof body.schema !== 'string')
      throw new CrawlError('CS_REGISTRY', `registry ${this.url} sent no schema text for id ${id}`);
    return body.schema;
  }

  /**
   * Sets the subject's compatibility level to {@link SUBJECT_COMPATIBILITY} (idempotent). Returns
   * false, instead of throwing, when `unknownSubjectOk` and the registry answers 404 (no such subject yet).
   * A 409 is asked again: two instances starting at once both create the subject's rule, and the
   * registry (Apicurio) answers the second "rule already exists"; that PUT then updates it.
   */
  private async requireCompatibility(subject: string, unknownSubjectOk: boolean): Promise<boolean> {
    const url = `${this.url.replace(/\/+$/, '')}/config/${encodeURIComponent(subject)}`;
    for (let attempt = 1; ; attempt++) {
      const res = await fetch(url, {
        method: 'PUT',
        headers: { ...this.headers, 'content-type': 'application/vnd.schemaregistry.v1+json' },
        body: JSON.stringify({ compatibility: SUBJECT_COMPATIBILITY }),
      });
      await res.body?.cancel();
      if (res.ok) return true;
      if (res.status === 404 && unknownSubjectOk) return false;
      if (res.status !== 409 || attempt >= CONFLICT_ATTEMPTS)
        throw new CrawlError(
          'CS_SCHEMA',
          `registry ${this.url} refused compatibility ${SUBJECT_COMPATIBILITY} for ${subject}: ${res.status}`,
        );
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
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
