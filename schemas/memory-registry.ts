import { CrawlError } from '../core/errors.js';
import type { SchemaRegistry } from './index.js';

/**
 * A registry held in memory: ids count up from 1 in registration order and the same text gets
 * the same id. For benches and tests that drive a task by hand; nothing survives the process.
 */
export class MemoryRegistry implements SchemaRegistry {
  private readonly schemas: string[] = [];

  async register(_subject: string, text: string): Promise<number> {
    const i = this.schemas.indexOf(text);
    return i >= 0 ? i + 1 : this.schemas.push(text);
  }

  async schemaById(id: number): Promise<string> {
    const text = this.schemas[id - 1];
    if (text === undefined) throw new CrawlError('CS_SCHEMA', `schema id ${id} is unknown to this registry`);
    return text;
  }
}
