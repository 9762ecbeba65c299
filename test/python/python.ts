/**
 * The Python that has the tests' independent tools (test/python/requirements.txt): the one
 * `npm test` found or installed (scripts/python-tools.sh exports CRAWLSTREAM_PYTHON), else python3.
 */
export function python(): string {
  return process.env['CRAWLSTREAM_PYTHON'] ?? 'python3';
}
