import { existsSync, readFileSync, renameSync, writeFileSync, fsyncSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { CrawlError } from '../../../core/errors.js';
import type { SchemaRegistry } from '../../../schemas/index.js';

interface RegistryFile {
  nextId: number;
  schemas: { id: number; subject: string; version: number; schema: string }[];
}

/**
 * The embedded engine's schema registry: subjects, versions and global ids in `schemas.json`
 * of the data dir, written atomically (temp file + fsync + rename). Same contract as a
 * Confluent registry: registering an already-known schema under a subject returns its id.
 */
export class FileSchemaRegistry implements SchemaRegistry {
  private readonly file: string;
  private state: RegistryFile;

  constructor(dataDir: string) {
    this.file = join(dataDir, 'schemas.json');
    if (existsSync(this.file)) {
      try {
        this.state = JSON.parse(readFileSync(this.file, 'utf8')) as RegistryFile;
      } catch (err) {
        throw new CrawlError('CS_SCHEMA', `${this.file} is not a readable schema registry: ${(err as Error).message}`, {
          cause: err,
        });
      }
    } else {
      this.state = { nextId: 1, schemas: [] };
    }
  }

  async register(subject: string, schemaText: string): Promise<number> {
    const known = this.state.schemas.find((s) => s.subject === subject && s.schema === schemaText);
    if (known) return known.id;
    const sameText = this.state.schemas.find((s) => s.schema === schemaText);
    const id = sameText ? sameText.id : this.state.nextId++;
    const version = this.state.schemas.filter((s) => s.subject === subject).length + 1;
    this.state.schemas.push({ id, subject, version, schema: schemaText });
    this.save();
    return id;
  }

  async schemaById(id: number): Promise<string> {
    const found = this.state.schemas.find((s) => s.id === id);
    if (!found) throw new CrawlError('CS_SCHEMA', `schema id ${id} is not in ${this.file}`);
    return found.schema;
  }

  /** Every id ever registered under the subject, with its schema text. */
  versions(subject: string): { id: number; schema: string }[] {
    return this.state.schemas.filter((s) => s.subject === subject).map(({ id, schema }) => ({ id, schema }));
  }

  private save(): void {
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify(this.state, null, 2));
    const fd = openSync(tmp, 'r');
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, this.file);
  }
}
