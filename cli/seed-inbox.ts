import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidOptionError } from '../core/errors.js';
import type { Engine } from '../runtime/engine.js';
import type { LinkBatch } from '../schemas/types.js';
import { normalizeUrl, siteOf } from '../processors/common/normalize.js';
import { SEED_BATCH_LINKS, TOPICS } from '../topology/crawl-topology.js';

/** The inbox a running embedded crawl polls for seeds (`crawlstream inject --data DIR`). */
export function seedInbox(dataDir: string): string {
  return join(dataDir, 'seed-inbox');
}

/**
 * Seeds normalized and grouped per site, at most SEED_BATCH_LINKS to a batch (so a record stays
 * within the links topic's size limit); invalid ones are reported on stderr and skipped.
 */
export function seedBatches(seeds: readonly string[], now: number, warn: (line: string) => void): LinkBatch[] {
  const full: LinkBatch[] = [];
  const bySite = new Map<string, LinkBatch>();
  for (const raw of seeds) {
    const n = normalizeUrl(raw);
    if (!n.ok) {
      warn(`skipping seed ${JSON.stringify(raw)}: ${n.reason}`);
      continue;
    }
    const site = siteOf(n.url);
    let batch = bySite.get(site);
    if (!batch) bySite.set(site, (batch = { site, sourceUrl: null, discoveredAt: now, links: [] }));
    batch.links.push({ url: n.url, depth: 0, redirectHops: 0 });
    if (batch.links.length >= SEED_BATCH_LINKS) {
      full.push(batch);
      bySite.delete(site);
    }
  }
  return [...full, ...bySite.values()];
}

/**
 * Queues seeds for the embedded crawl on `dataDir` (atomically: write, then rename into the
 * inbox); the crawl running there takes them within a second or two, otherwise the next run on
 * the directory does. Returns the file written.
 */
export function writeSeeds(dataDir: string, seeds: readonly string[], now = Date.now()): string {
  if (!existsSync(dataDir)) throw new InvalidOptionError(`--data ${dataDir} does not exist`);
  const inbox = seedInbox(dataDir);
  mkdirSync(inbox, { recursive: true });
  const name = `${now}-${process.pid}-${Math.random().toString(36).slice(2, 8)}.json`;
  const tmp = join(inbox, `.${name}.tmp`);
  writeFileSync(tmp, JSON.stringify({ seeds, issuedAt: now }));
  renameSync(tmp, join(inbox, name));
  return join(inbox, name);
}

/**
 * Moves queued seed files into the links topic, oldest first, as a crawl's own seeds are sent; a
 * file is deleted only after its records are written. Unreadable files are renamed `.bad` and
 * reported. Returns the seeds sent.
 */
export async function drainSeedInbox(dataDir: string, engine: Engine, warn: (line: string) => void): Promise<number> {
  const inbox = seedInbox(dataDir);
  if (!existsSync(inbox)) return 0;
  let n = 0;
  for (const name of readdirSync(inbox)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const file = join(inbox, name);
    let seeds: string[];
    let issuedAt: number;
    try {
      const doc = JSON.parse(readFileSync(file, 'utf8')) as { seeds?: unknown; issuedAt?: unknown };
      if (
        !Array.isArray(doc.seeds) ||
        !doc.seeds.every((s) => typeof s === 'string') ||
        typeof doc.issuedAt !== 'number'
      )
        throw new Error('not a list of seeds');
      seeds = doc.seeds as string[];
      issuedAt = doc.issuedAt;
    } catch (err) {
      warn(`seed inbox: ${name} is not a seed file (${(err as Error).message}); kept as ${name}.bad`);
      renameSync(file, `${file}.bad`);
      continue;
    }
    const batches = seedBatches(seeds, issuedAt, warn);
    if (batches.length > 0)
      await engine.produce(
        TOPICS.links,
        batches.map((b) => ({ key: b.site, value: b, timestamp: issuedAt })),
      );
    unlinkSync(file);
    n += batches.reduce((k, b) => k + b.links.length, 0);
  }
  return n;
}
