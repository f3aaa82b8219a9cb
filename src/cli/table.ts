/** C0 and C1 controls, DEL, and the bidi overrides that reorder what a terminal shows */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const escaped = (c: string): string => `\\u{${c.charCodeAt(0).toString(16)}}`;

/**
 * Client-chosen text (ids, message ids, names, reasons) as a terminal shows it harmlessly: every
 * control character, newlines included, as `\u{1b}`; so no title change, colour or `\r` that
 * overwrites a row reaches the operator's terminal (docs/operations.md#commands).
 */
export function terminalSafe(text: string): string {
  return text.replace(CONTROLS, escaped);
}

/** JSON for scripts: what JSON.stringify leaves raw (DEL, C1, bidi, line separators) as \\u escapes too */
export function printJson(value: unknown): void {
  const hex4 = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  process.stdout.write(JSON.stringify(value).replace(/[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, hex4) + '\n');
}

/** what the commands write to stdout: every control character but the line ends escaped */
export function print(text: string): void {
  process.stdout.write(text.split('\n').map(terminalSafe).join('\n'));
}

/** A plain text table for the terminal: a header row, columns padded to their widest cell; cells are escaped. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly (string | number)[]>): string {
  const cells = [header, ...rows.map((row) => row.map((cell) => terminalSafe(String(cell))))];
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
