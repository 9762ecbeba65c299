import { cpus, totalmem } from 'node:os';

/** One line naming the machine and date, printed before any figure. */
export function machineLine(): string {
  const cpu = cpus();
  return `machine: ${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown cpu'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, ${new Date().toISOString().slice(0, 10)}`;
}

export function figure(name: string, value: number, unit: string): void {
  process.stdout.write(`${name}: ${value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(2)} ${unit}\n`);
}
