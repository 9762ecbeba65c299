import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { crawlArgs, removeDir, sleep, tempDir, writeSeeds } from './harness.js';

const HARNESS = pathToFileURL(join(import.meta.dirname, 'harness.js')).href;

/** Whether a process of this id still exists (a zombie counts until its parent reaps it). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test(
  'a crawl still running when its test times out is killed at the end of the test file, which then exits',
  { timeout: 180_000 },
  async () => {
    const dir = tempDir('crawlstream-harness-kill-');
    try {
      // a crawl that would run ten minutes: one seed on a port nobody listens on, no --until-idle
      const seeds = writeSeeds(dir, ['http://nothing.test:9/']);
      const args = crawlArgs(seeds, join(dir, 'data')).filter((a) => a !== '--until-idle');
      const pidFile = join(dir, 'crawl.pid');
      const fixture = join(dir, 'times-out.test.mjs');
      writeFileSync(
        fixture,
        `import { test } from 'node:test';
import { writeFileSync } from 'node:fs';
import { startCli } from ${JSON.stringify(HARNESS)};
test('waits for a crawl longer than it may', { timeout: 3000 }, async () => {
  const { child, exited } = startCli(${JSON.stringify([...args, '--duration', '600'])});
  writeFileSync(${JSON.stringify(pidFile)}, String(child.pid));
  await exited;
});
`,
      );
      // run as a file of its own, not inside this one's test runner
      const env = { ...process.env };
      delete env['NODE_TEST_CONTEXT'];
      const file = spawn(process.execPath, [fixture], { stdio: ['ignore', 'pipe', 'pipe'], env });
      let out = '';
      file.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      file.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      // the bound only turns a hang into a failure: without the kill the file lives as long as the crawl
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([
        new Promise<number | null>((resolve) => file.on('close', resolve)),
        new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), 120_000))),
      ]);
      clearTimeout(timer);
      if (code === 'hung') file.kill('SIGKILL');
      assert.notEqual(code, 'hung', `the test file did not exit while its crawl ran:\n${out}`);
      assert.equal(code, 1, `the timed-out test fails its file:\n${out}`);
      assert.match(out, /timed out after 3000ms/);
      assert.ok(existsSync(pidFile), 'the crawl started');
      const pid = Number(readFileSync(pidFile, 'utf8'));
      // killed by the harness; reaped by init once the file's process is gone
      for (let i = 0; i < 100 && alive(pid); i++) await sleep(100);
      assert.equal(alive(pid), false, `the crawl (pid ${pid}) was left running`);
    } finally {
      removeDir(dir);
    }
  },
);
