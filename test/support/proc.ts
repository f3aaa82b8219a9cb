import { readdirSync, readFileSync } from 'node:fs';

/**
 * What an attacker on the same host sees of a broker process: its resident memory and its open
 * file descriptors, read from /proc (Linux), the way the bounds tests measure them.
 */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? NaN);
  return Math.round((kib / 1024) * 10) / 10;
}

export function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}
