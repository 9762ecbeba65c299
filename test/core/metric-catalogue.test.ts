import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { M, METRICS, ZERO_SERIES, type MetricDef } from '../../core/metric-catalogue.js';
import { Metrics } from '../../core/metrics.js';
import { PrometheusExporter } from '../../core/prometheus.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

const defs = Object.entries(METRICS) as [string, MetricDef][];

test('every metric has a unique crawlstream_ name in base units and no unbounded label', () => {
  const names = defs.map(([, d]) => d.name);
  assert.equal(new Set(names).size, names.length, 'two metrics share a name');
  for (const [id, d] of defs) {
    assert.match(d.name, /^crawlstream_[a-z][a-z0-9_]*$/, id);
    assert.ok(!d.name.endsWith('_total'), `${id}: counters get _total when exported, not in the catalogue`);
    if (d.unit === 'seconds') assert.match(d.name, /_seconds$/, `${id} is in seconds`);
    if (d.unit === 'bytes') assert.match(d.name, /_bytes$/, `${id} is in bytes`);
    if (/_(ms|millis|milliseconds|kb|mb)$/.test(d.name)) assert.fail(`${id}: not a base unit`);
    for (const label of d.labels)
      assert.ok(
        !['host', 'url', 'site', 'ip', 'lease', 'path'].includes(label),
        `${id} has an unbounded label ${label}`,
      );
    assert.ok(d.help.length > 10 && d.help.endsWith('.'), `${id} needs one line of help`);
    if (d.type === 'histogram') assert.ok((d.buckets?.length ?? 0) > 3, `${id} needs buckets`);
  }
});

test('the call-site constants name every catalogue id', () => {
  assert.deepEqual(Object.values(M).sort(), Object.keys(METRICS).sort());
  assert.equal(M.urlsDropped, 'urls_dropped');
});

test('shipped code names metrics by the catalogue constants, never by string literals', () => {
  const files = execFileSync('git', ['ls-files', '*.ts'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f !== '' && !f.startsWith('test/') && f !== 'core/metric-catalogue.ts');
  assert.ok(files.length > 50, `${files.length} files`);
  const literal = /\.(inc|setGauge|observe|counter|gauge|total|countersOf)\(\s*['"`]/;
  const offenders = files.flatMap((f) =>
    readFileSync(ROOT + f, 'utf8')
      .split('\n')
      .flatMap((line, i) => (literal.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
  );
  assert.deepEqual(offenders, []);
});

test('a labelled counter exports its zero series at 0 before any event, and its counted values once they happen', async () => {
  for (const [id, values] of Object.entries(ZERO_SERIES)) {
    const d = METRICS[id as keyof typeof METRICS] as MetricDef;
    assert.equal(d.type, 'counter', id);
    assert.ok(d.labels.length > 0, `${id}: a counter without labels exists at 0 anyway`);
    for (const v of values ?? []) assert.equal(v.split(',').length, d.labels.length, `${id}: ${v}`);
  }
  const metrics = new Metrics();
  metrics.inc(M.fetchErrors, 2, 'CS_DNS');
  const { body } = await new PrometheusExporter(metrics).scrape(undefined);
  assert.match(body, /^crawlstream_fetch_errors_total\{code="CS_DNS"\} 2$/m);
  assert.match(body, /^crawlstream_fetch_errors_total\{code="CS_TIMEOUT"\} 0$/m);
  assert.match(body, /^crawlstream_dead_letters_total\{code="CS_INTERNAL"\} 0$/m);
  assert.match(body, /^crawlstream_control_commands_total\{action="BLOCK"\} 0$/m);
  // one series per label value, never a zero beside a counted one
  assert.equal(body.match(/^crawlstream_fetch_errors_total\{code="CS_DNS"\}/gm)?.length, 1);
});
