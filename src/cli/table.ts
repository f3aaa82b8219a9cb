import { safe } from './text.js';
/** JSON for scripts: what JSON.stringify leaves raw (DEL, C1, bidi, line separators) as \\u escapes too */
export function printJson(value: unknown): void {
  const hex4 = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  process.stdout.write(JSON.stringify(value).replace(/[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, hex4) + '\n');
}

/** what the commands write to stdout: every control character but the line ends escaped */
export function print(text: string): void {
  process.stdout.write(text.split('\n').map(safe).join('\n'));
}

/** A plain text table for the terminal: a header row, columns padded to their widest cell; cells are escaped. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly (string | number)[]>): string {
  const cells = [header, ...rows.map((row) => row.map((cell) => safe(String(cell))))];
  const widths = header.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  return cells.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ')).join('\n') + '\n';
}

export function duration(seconds: number): string {
  const d = Math.floor(seconds / 86_400);
  const h = Math.floor((seconds % 86_400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return [d ? `${d}d` : '', d || h ? `${h}h` : '', d || h || m ? `${m}m` : '', `${s}s`].filter(Boolean).join(' ');
}
