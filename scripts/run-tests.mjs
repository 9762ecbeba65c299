// `node scripts/run-tests.mjs FILE.test.js ...`: runs test files in two lanes, one `node --test`
// process per file, and prints each file's TAP when it ends, then one closing line with every
// file's counts added up. Exits 1 when any file failed.
//
// Lanes: files under a `kafka/` folder share one broker and its default topics, so they run one
// at a time, in the order given, in lane 1; every other file waits in one queue that both lanes
// take from (lane 1 once its Kafka files are done), slowest first by the durations this machine
// recorded last time (.cache/test-durations.json), or e2e files first when none are recorded, so
// that the two lanes end close together. CRAWLSTREAM_TEST_LANES=1 runs every file in one lane, in
// the order given.
//
// What a file's tests leave running in its process group is killed once the file exits, and a
// file still running after CRAWLSTREAM_TEST_FILE_TIMEOUT_S (default 1,500 s, above the longest
// test's own timeout) is killed with its group and counted as failed, with the TAP it printed: a
// test that timed out but left a crawl holding its file open fails the run instead of hanging it.
// Not --test-force-exit: on Node 20 it drops verdicts from the report, at exit 0 (a CI run
// reported 138 of normalize.test's 153 tests; nodejs/node#64833).
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { clearTimeout, setTimeout } from 'node:timers';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node scripts/run-tests.mjs FILE.test.js ...');
  process.exit(2);
}
const lanes = process.env.CRAWLSTREAM_TEST_LANES === '1' ? 1 : 2;
const durationsFile = '.cache/test-durations.json';
const fileLimitMs = 1000 * Number(process.env.CRAWLSTREAM_TEST_FILE_TIMEOUT_S ?? 1_500);

/** @type {Record<string, number>} */
let recorded = {};
try {
  recorded = JSON.parse(readFileSync(durationsFile, 'utf8'));
} catch {
  // first run on this machine: e2e first, then the order given
}
const isKafka = (f) => /(^|\/)kafka\//.test(f);
const kafka = lanes === 1 ? [] : files.filter(isKafka);
const shared = lanes === 1 ? [...files] : files.filter((f) => !isKafka(f));
if (lanes > 1) {
  const weight = (f) => recorded[f] ?? (/(^|\/)e2e\//.test(f) ? 1e9 : 0);
  shared.sort((a, b) => weight(b) - weight(a));
}

/** @type {Set<import('node:child_process').ChildProcess>} */
const running = new Set();
/** @type {{ file: string, lane: number, ms: number, code: number | null, tap: string }[]} */
const done = [];

function runFile(file, lane) {
  return new Promise((resolve) => {
    const start = Date.now();
    // its own process group, so that a stop reaches the runner's subprocess too
    const child = spawn(process.execPath, ['--test', '--test-reporter=tap', '--test-concurrency=1', file], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    running.add(child);
    const out = [];
    child.stdout.on('data', (chunk) => out.push(chunk));
    child.stderr.on('data', (chunk) => out.push(chunk));
    const killGroup = () => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // nothing left in the group
      }
    };
    let overLimit = false;
    const watchdog = setTimeout(() => {
      overLimit = true;
      killGroup();
    }, fileLimitMs);
    // what a file's tests left running without holding the file open (a detached or unref'd
    // child) goes with it; one that holds it open is the watchdog's
    child.on('exit', killGroup);
    child.on('close', (code, signal) => {
      clearTimeout(watchdog);
      running.delete(child);
      const result = {
        file,
        lane,
        ms: Date.now() - start,
        code: signal || overLimit ? 1 : code,
        tap: Buffer.concat(out).toString(),
      };
      done.push(result);
      const limit = overLimit ? `, killed at the per-file limit of ${fileLimitMs / 1000} s` : '';
      console.log(`# ---- ${file} (lane ${lane}, ${(result.ms / 1000).toFixed(1)} s, exit ${signal ?? code}${limit})`);
      process.stdout.write(result.tap.endsWith('\n') || result.tap === '' ? result.tap : `${result.tap}\n`);
      resolve(result);
    });
  });
}

async function lane(n, own) {
  for (const file of own) await runFile(file, n);
  for (let file = shared.shift(); file !== undefined; file = shared.shift()) await runFile(file, n);
}

function stopAll(signal, status) {
  for (const child of running) {
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  }
  process.exit(status);
}
process.on('SIGINT', () => stopAll('SIGINT', 130));
process.on('SIGTERM', () => stopAll('SIGTERM', 143));

const started = Date.now();
await Promise.all([lane(1, kafka), ...(lanes > 1 ? [lane(2, [])] : [])]);

const counts = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };
for (const { tap } of done) {
  for (const m of tap.matchAll(/^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$/gm)) counts[m[1]] += Number(m[2]);
}
const failed = done.filter((r) => r.code !== 0);
mkdirSync('.cache', { recursive: true });
writeFileSync(durationsFile, JSON.stringify({ ...recorded, ...Object.fromEntries(done.map((r) => [r.file, r.ms])) }));
const laneEnds = [1, 2]
  .slice(0, lanes)
  .map((n) => done.filter((r) => r.lane === n).reduce((s, r) => s + r.ms, 0) / 1000);
const slowest = [...done].sort((a, b) => b.ms - a.ms).slice(0, 5);
console.log(`# slowest files: ${slowest.map((r) => `${r.file} ${(r.ms / 1000).toFixed(0)} s`).join(', ')}`);
console.log(
  `# lanes busy: ${laneEnds.map((s) => `${s.toFixed(0)} s`).join(', ')}; wall ${((Date.now() - started) / 1000).toFixed(0)} s`,
);
for (const r of failed) console.log(`# failed file: ${r.file} (exit ${r.code})`);
// the closing line: every file's counts added up (files that died before printing theirs count as failed above)
console.log(
  `# all files: ${done.length} files, tests ${counts.tests}, pass ${counts.pass}, fail ${counts.fail}, cancelled ${counts.cancelled}, skipped ${counts.skipped}, todo ${counts.todo}, failed files ${failed.length}`,
);
process.exit(failed.length > 0 ? 1 : 0);
