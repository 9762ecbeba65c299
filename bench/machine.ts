import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';

/**
 * One line naming the machine, the date and how memory is mapped (the allocator's tunables and
 * Linux's transparent huge pages move random-access figures by several per cent), printed before
 * any figure.
 */
export function machineLine(): string {
  const cpu = cpus();
  const line = `machine: ${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, ${new Date().toISOString().slice(0, 10)}`;
  return `${line}, GLIBC_TUNABLES=${process.env.GLIBC_TUNABLES || '(unset)'}, transparent huge pages: ${hugePages()}`;
}

/** The kernel's transparent-huge-page mode (the bracketed word), or 'unknown' off Linux. */
function hugePages(): string {
  try {
    return /\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'latin1'))?.[1] ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export function figure(name: string, value: number, unit: string): void {
  process.stdout.write(
    `${name}: ${value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(2)} ${unit}\n`,
  );
}
