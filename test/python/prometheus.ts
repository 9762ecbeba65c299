import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { python } from './python.js';

/** One sample as Python's prometheus_client parser read it. */
export interface ParsedSample {
  readonly name: string;
  readonly labels: Record<string, string>;
  /** null for NaN. */
  readonly value: number | null;
}

/** One metric family: name (without `_total` for counters), type and samples. */
export interface ParsedFamily {
  readonly name: string;
  readonly type: string;
  readonly samples: ParsedSample[];
}

const PARSE = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics
parse = openmetrics if sys.argv[1] == 'openmetrics' else text_string_to_metric_families
# JSON has no NaN: a NaN sample (e.g. a GC figure not yet measured) reads as null
num = lambda v: None if v != v else v
out = [{'name': f.name, 'type': f.type, 'samples': [{'name': s.name, 'labels': s.labels, 'value': num(s.value)} for s in f.samples]}
       for f in parse(sys.stdin.read())]
print(json.dumps(out))
`;

/**
 * Parses an exposition with the independent parser of Python's `prometheus_client` (the text
 * format, or OpenMetrics); fails the calling test when it refuses the text.
 */
export function parseExposition(text: string, format: 'text' | 'openmetrics' = 'text'): ParsedFamily[] {
  const r = spawnSync(python(), ['-c', PARSE, format], { input: text, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.error, undefined, `running python failed: ${String(r.error)}`);
  assert.equal(r.status, 0, `prometheus_client refused the exposition:\n${r.stderr}`);
  return JSON.parse(r.stdout) as ParsedFamily[];
}

/** The sum of a family's samples named `sample` (e.g. `crawlstream_fetches_total`). */
export function sampleSum(families: ParsedFamily[], sample: string): number {
  let sum = 0;
  for (const f of families) for (const s of f.samples) if (s.name === sample) sum += s.value ?? 0;
  return sum;
}
