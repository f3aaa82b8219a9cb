import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { broker } from '../support/harness.js';
import { parseMetrics } from '../support/prom.js';

/**
 * The alert rules in docs/management.md and the Grafana dashboard name only metrics a real
 * broker exports (issue 17): a renamed metric fails here, not in someone's pager.
 */
const root = join(import.meta.dirname, '..', '..');
const METRIC = /\b((?:whisker|process|nodejs)_[a-z0-9_]+)\b/g;
const HISTOGRAM_PARTS = /_(bucket|sum|count)$/;

function namesIn(expr: string): string[] {
  return [...expr.matchAll(METRIC)].map((m) => m[1]!);
}

/** the ```yaml block under "## Alert rules" */
function alertRules(): Array<{ alert: string; expr: string; block: string }> {
  const doc = readFileSync(join(root, 'docs', 'management.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Alert rules'));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)![1]!;
  return yaml.split(/\n(?= {6}- alert: )/).slice(1).map((block) => ({
    alert: /- alert: (\S+)/.exec(block)![1]!,
    expr: /\n {8}expr: (.+)/.exec(block)![1]!,
    block,
  }));
}

interface Panel { title: string; type: string; targets?: Array<{ expr: string }> }

function grafanaExprs(): Array<{ panel: string; expr: string }> {
  const dashboard = JSON.parse(readFileSync(join(root, 'docs', 'grafana', 'whisker-dashboard.json'), 'utf8')) as {
    panels: Panel[];
    templating: { list: Array<{ definition: string }> };
  };
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
  for (const variable of dashboard.templating.list) exprs.push({ panel: 'variable', expr: variable.definition });
  return exprs;
}

/** the names in the first column of the table under "## Metrics" */
function documentedMetrics(): string[] {
  const doc = readFileSync(join(root, 'docs', 'management.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Metrics'), doc.indexOf('## Label cardinality'));
  return [...section.matchAll(/^\| `(whisker_[a-z0-9_]+)` \|/gm)].map((m) => m[1]!);
}

describe('the metrics table of docs/management.md', () => {
  test('every whisker_ metric it lists exists in a real broker\'s scrape, with the documented type', async () => {
    const b = await broker({ management: { port: 0 } });
    const families = parseMetrics(await (await fetch(`http://127.0.0.1:${b.managementPort}/metrics`)).text());
    const doc = readFileSync(join(root, 'docs', 'management.md'), 'utf8');
    const names = documentedMetrics();
    expect(names).toEqual(expect.arrayContaining(['whisker_history_bytes', 'whisker_replays_total', 'whisker_replays_in_progress', 'whisker_replayed_messages_total']));
    for (const name of names) {
      expect(families.has(name), name).toBe(true);
      const type = new RegExp(`^\\| \`${name}\` \\| (\\w+) \\|`, 'm').exec(doc)![1];
      expect(families.get(name)!.type, name).toBe(type);
    }
  });
});

describe('alert rules and the Grafana dashboard', () => {
  test('every metric they name exists in a real broker\'s scrape', async () => {
    const b = await broker({ management: { port: 0 } });
    const families = parseMetrics(await (await fetch(`http://127.0.0.1:${b.managementPort}/metrics`)).text());
    const exists = (name: string) => families.has(name) || (HISTOGRAM_PARTS.test(name) && families.get(name.replace(HISTOGRAM_PARTS, ''))?.type === 'histogram');

    const rules = alertRules();
    expect(rules.map((r) => r.alert)).toEqual(expect.arrayContaining(['WhiskerMasterMissing', 'WhiskerSlaveNotInStep', 'WhiskerQueueAge', 'WhiskerDeadLettersRising', 'WhiskerStoreUnhealthy']));
    for (const rule of rules) {
      expect(namesIn(rule.expr).length, rule.alert).toBeGreaterThan(0);
      for (const name of namesIn(rule.expr)) expect(exists(name), `${rule.alert}: ${name}`).toBe(true);
      expect(rule.block, rule.alert).toMatch(/\n {8}for: \d+[smh]\n {8}labels: \{ severity: (critical|warning) \}\n {8}annotations:\n {10}summary: ".+"/);
    }

    const exprs = grafanaExprs();
    expect(exprs.length).toBeGreaterThan(15);
    for (const { panel, expr } of exprs) {
      expect(namesIn(expr).length, panel).toBeGreaterThan(0);
      for (const name of namesIn(expr)) expect(exists(name), `${panel}: ${name}`).toBe(true);
    }
  });
});
