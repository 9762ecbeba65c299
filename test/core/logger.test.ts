import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger, parseLogOptions } from '../../core/logger.js';
import { stringSerde } from '../../core/serde.js';
import { EmbeddedEngine } from '../../runtime/engines/embedded/embedded-engine.js';
import type { Processor, ProcessorContext } from '../../runtime/processor.js';
import { Topology } from '../../runtime/topology.js';

test('json lines carry level, message, bindings and fields; lines below the level are dropped', () => {
  const lines: string[] = [];
  const log = createLogger({ format: 'json', level: 'info', write: (l) => lines.push(l) }).child({ task: '0_1' });
  log.debug('not written');
  log.info('opened', { records: 3 });
  log.error('failed');
  assert.equal(lines.length, 2);
  const first = JSON.parse(lines[0]!) as Record<string, unknown>;
  assert.equal(first['level'], 'info');
  assert.equal(first['msg'], 'opened');
  assert.equal(first['task'], '0_1');
  assert.equal(first['records'], 3);
  assert.ok(!Number.isNaN(Date.parse(first['time'] as string)));
  assert.equal((JSON.parse(lines[1]!) as Record<string, unknown>)['level'], 'error');
});

test('text lines are one line each with the level and key=value tags', () => {
  const lines: string[] = [];
  createLogger({ write: (l) => lines.push(l) })
    .child({ task: '2_0' })
    .warn('slow host', { gap: 'a b' });
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /^\S+ WARN {2}slow host {2}task=2_0 gap="a b"$/);
});

test('--log-level and --log-format refuse unknown values, naming the option', () => {
  assert.throws(
    () => parseLogOptions('loud', undefined),
    /--log-level must be one of debug, info, warn, error, got "loud"/,
  );
  assert.throws(() => parseLogOptions(undefined, 'xml'), /--log-format must be one of text, json, got "xml"/);
  assert.deepEqual(parseLogOptions('debug', 'json'), { level: 'debug', format: 'json' });
});

class Greeter implements Processor {
  init(context: ProcessorContext): void {
    context.log.info('ready');
  }
  process(): void {}
}

test('a processor logs through its context, with its task and processor in every line', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'crawlstream-log-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const lines: string[] = [];
  const topology = new Topology('logs')
    .addTopic({ name: 'in', partitions: 2, keySerde: stringSerde, schema: 'LinkBatch' })
    .addSource('in-source', 'in')
    .addProcessor('greeter', () => new Greeter(), ['in-source']);
  const engine = new EmbeddedEngine(topology, {
    dataDir: dir,
    logger: createLogger({ format: 'json', write: (l) => lines.push(l) }),
  });
  await engine.start();
  await engine.stop();
  const greetings = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'ready');
  assert.deepEqual(greetings.map((g) => [g['task'], g['processor']]).sort(), [
    ['0_0', 'greeter'],
    ['0_1', 'greeter'],
  ]);
});
