/**
 * A strict reader of the Prometheus text format 0.0.4, enough to check what a broker exports:
 * every sample belongs to a family announced by `# HELP` and `# TYPE`, labels parse, values are
 * numbers. Throws on anything else, so a malformed scrape fails the test.
 */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Family {
  readonly name: string;
  readonly type: string;
  readonly help: string;
  readonly samples: Sample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( \d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;
const SUFFIXES = ['_bucket', '_sum', '_count', '_total', '_created'];

export function parseMetrics(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const help = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta as unknown as [string, string, string, string];
      if (kind === 'HELP') help.set(name, rest);
      else families.set(name, { name, type: rest, help: help.get(name) ?? '', samples: [] });
      continue;
    }
    if (line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const [, name, , labelText = '', valueText] = match as unknown as [string, string, string, string | undefined, string];
    const labels: Record<string, string> = {};
    LABEL.lastIndex = 0;
    let label: RegExpExecArray | null;
    let read = 0;
    while ((label = LABEL.exec(labelText)) !== null) {
      labels[label[1]!] = label[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      read = LABEL.lastIndex;
    }
    if (read !== labelText.length) throw new Error(`bad labels: ${line}`);
    const value = valueText === '+Inf' ? Infinity : valueText === '-Inf' ? -Infinity : Number(valueText);
    if (Number.isNaN(value) && valueText.toLowerCase() !== 'nan') throw new Error(`bad value: ${line}`);
    const family = families.get(name) ?? families.get(SUFFIXES.reduce((n, s) => (n.endsWith(s) && families.has(n.slice(0, -s.length)) ? n.slice(0, -s.length) : n), name));
    if (!family) throw new Error(`sample without # TYPE: ${line}`);
    if (family.help === '') throw new Error(`family without # HELP: ${family.name}`);
    family.samples.push({ name, labels, value });
  }
  return families;
}

/** the value of the one sample of `name` whose labels include `labels` */
export function valueOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const family of families.values()) {
    for (const s of family.samples) {
      if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) return s.value;
    }
  }
  return undefined;
}

export function samplesOf(families: Map<string, Family>, name: string): Sample[] {
  return [...families.values()].flatMap((f) => f.samples.filter((s) => s.name === name));
}
