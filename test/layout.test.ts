import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, test } from 'vitest';

/**
 * The layout holds (docs/architecture.md): no import circle in src/, type-only imports
 * included (lint's import-x/no-cycle skips those), the folders' imports go one way (lint's
 * no-restricted-imports says the same, this checks every file whatever lint is run on), and
 * no file past ~350 lines without the reason at its top.
 */
const SRC = resolve(import.meta.dirname, '../src');
const MAX_LINES = 350;
const LONG_REASON = 'Why this file is long:';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

const files = sources(SRC);
const graph = new Map<string, string[]>();
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const targets = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts')));
  graph.set(file, targets.filter((t) => graph.has(t) || files.includes(t)));
}

/**
 * The folders of src/ each may import (docs/architecture.md#imports), besides themselves:
 * protocol <- link <- client; protocol <- broker; ops/ above broker/, reading it through
 * broker/api.ts only; server/ above both, the only place that puts a broker and ops together.
 */
const MAY_IMPORT: Record<string, readonly string[]> = {
  protocol: [],
  link: ['protocol'],
  config: ['protocol', 'link'],
  runtime: ['config'],
  client: ['protocol', 'link'],
  broker: ['protocol', 'link', 'config', 'runtime'],
  ops: ['protocol', 'config', 'runtime', 'broker/api.ts'],
  server: ['protocol', 'link', 'config', 'runtime', 'broker', 'ops'],
  cli: ['protocol', 'link', 'config', 'runtime', 'client', 'ops', 'server'],
};

/** `broker` for src/broker/**, `broker/api.ts` for that file itself; `.` for src/index.ts and src/embed.ts */
const folderOf = (file: string): string => {
  const parts = relative(SRC, file).split('/');
  return parts.length === 1 ? '.' : parts[0]!;
};

function wrongWay(): string[] {
  const found: string[] = [];
  for (const [file, targets] of graph) {
    const from = folderOf(file);
    if (from === '.') continue; // the package's entry points may reach anything
    const allowed = MAY_IMPORT[from];
    for (const target of targets) {
      const to = folderOf(target);
      if (to === from || allowed?.includes(to) || allowed?.includes(relative(SRC, target))) continue;
      found.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
    }
  }
  return found.sort();
}

/** Tarjan's strongly connected components: any with more than one file is a circle */
function circles(): string[][] {
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const found: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        component.push(relative(SRC, w));
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const file of files) if (!idx.has(file)) visit(file);
  return found;
}

describe('layout', () => {
  test('no import circle in src/, type imports included', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(circles()).toEqual([]);
  });

  test('imports go one way: protocol <- link <- client; protocol <- broker <- ops <- server', () => {
    // a new folder of src/ gets its row above
    expect([...new Set(files.map(folderOf))].filter((f) => f !== '.' && !(f in MAY_IMPORT))).toEqual([]);
    expect(wrongWay()).toEqual([]);
  });

  test(`no source file over ${MAX_LINES} lines without "${LONG_REASON}" at its top`, () => {
    const long = files
      .map((file) => ({ file: relative(SRC, file), lines: readFileSync(file, 'utf8').split('\n') }))
      .filter(({ lines }) => lines.length > MAX_LINES && !lines.slice(0, 80).some((l) => l.includes(LONG_REASON)))
      .map(({ file, lines }) => `${file}: ${lines.length} lines`);
    expect(long).toEqual([]);
  });
});
