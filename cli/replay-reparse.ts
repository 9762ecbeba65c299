/** `crawlstream replay reparse`: placeholder until the reparse job lands (issue #19). */
export const REPARSE_USAGE = `usage: crawlstream replay reparse --data DIR [options]

  re-derives page records from archived WARC payloads through the current parser (not built yet)`;

export async function runReparse(_args: string[], _out: (line: string) => void): Promise<number> {
  throw new Error('replay reparse is not built yet');
}
