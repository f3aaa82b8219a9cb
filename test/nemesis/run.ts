import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkHeap, checkMessages, checkOneDeliverer, epochChanges, type HeapRule, type Recorded, type Verdict } from './checker.js';
import { Cluster, DEDUPE_WINDOW_S, HEARTBEAT_S, type LinkMode, PREFETCH, Proc, root } from './cluster.js';
import { type FaultRun, runFault } from './faults.js';
import { describe, type Fault, schedule } from './schedule.js';

/**
 * The nemesis (issue 27, docs/operations.md#the-nemesis): a real election cluster under steady
 * traffic while faults drawn from a seed hit it, then the checker. `npm run nemesis -- --seed N
 * --minutes M`; test/nemesis/nemesis.test.ts runs 3 minutes of it in CI.
 */
export interface NemesisOptions {
  readonly seed: number;
  readonly minutes: number;
  readonly log?: (line: string) => void;
  /** how links are cut: network namespaces where they can be made, else TCP proxies */
  readonly links?: LinkMode;
}

export interface NemesisResult {
  readonly seed: number;
  readonly schedule: readonly Fault[];
  readonly runs: readonly FaultRun[];
  readonly verdicts: readonly Verdict[];
  readonly failed: readonly Verdict[];
}

const SAMPLE_MS = 250;
const WARM_MS = 15_000;
const SEND_TIMEOUT_MS = 60_000;
/**
 * How heaps are judged (docs/operations.md#the-nemesis): floor growth past 4 MiB a minute, measured
 * from 75 s after a broker's start (its dedupe window, 60 s, fills the router's and the store's
 * tables with ids: ~5 MiB at 500 msg/s, bounded), over at least 90 s: the calm phase is made
 * longer when a broker restarted late in the faults (over 60 s, a slave restarted 4 s before the
 * calm phase read 3.06 MiB/min once, a slope of six 10-s floors: too few to judge a bound of 4).
 */
export const HEAP_RULE: HeapRule = { boundMiBPerMin: 4, warmMs: (DEDUPE_WINDOW_S + 15) * 1000, minMeasureMs: 90_000 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** how a run of `minutes` is cut: warm-up, faults, then a calm phase in which heaps are measured */
export function phases(minutes: number): { warmMs: number; faultMs: number; calmMs: number } {
  const total = minutes * 60_000;
  const calmMs = Math.max(75_000, Math.round(total * 0.15));
  return { warmMs: WARM_MS, faultMs: Math.max(0, total - WARM_MS - calmMs), calmMs };
}

export async function runNemesis(options: NemesisOptions): Promise<NemesisResult> {
  const log = options.log ?? ((line: string) => console.log(`[nemesis ${new Date().toISOString().slice(11, 23)}] ${line}`));
  const { warmMs, faultMs, calmMs } = phases(options.minutes);
  const faults = schedule(options.seed, faultMs);
  log(`seed ${options.seed}, ${options.minutes} min: warm ${warmMs / 1000} s, faults ${faultMs / 1000} s, calm ${calmMs / 1000} s; schedule (${faults.length} faults):`);
  for (const fault of faults) log(`  ${describe(fault)}`);

  const cluster = await Cluster.create(log, options.links);
  log(`links cut ${cluster.mode === 'netns' ? 'between network namespaces' : 'by TCP proxies'}`);
  const runs: FaultRun[] = [];
  let workload: Proc | null = null;
  try {
    await cluster.start();
    if (!(await cluster.settled(60_000))) throw new Error('harness: no single master among the three brokers 60 s after start');
    log(`cluster up: master ${cluster.master()?.name}, data in ${cluster.dir}`);

    const out = join(cluster.dir, 'recorded.json');
    let ready = false;
    let done = false;
    const workloadOptions = {
      hosts: cluster.hosts, keysDirectory: join(cluster.dir, 'client-keys'), heartbeatTimeout: HEARTBEAT_S * 1000, sendTimeout: SEND_TIMEOUT_MS,
      prefetch: PREFETCH, tickMs: 10, feedPerTick: 2, replayEveryMs: 15_000, deliverTimeoutMs: 60_000, out,
    };
    workload = new Proc([...cluster.clientExec, process.execPath, join(root, 'test/nemesis/workload.mjs'), JSON.stringify(workloadOptions)], {
      stdin: true,
      onLine: (line) => {
        const event = JSON.parse(line) as { e: string };
        if (event.e === 'ready') ready = true;
        else if (event.e === 'done') done = true;
        else if (event.e === 'progress') log(`traffic ${line}`);
      },
    });
    for (let waited = 0; !ready; waited += 100) {
      if (!workload.alive || waited > 60_000) throw new Error('harness: the client process did not connect within 60 s');
      await sleep(100);
    }
    await sleep(warmMs);

    const faultStart = Date.now();
    for (const fault of faults) {
      await sleep(Math.max(0, faultStart + fault.atMs - Date.now()));
      log(`fault: ${describe(fault)}`);
      // a fault that could not be run or healed (a broker that did not start) is a finding, not the end
      runs.push(await runFault(cluster, fault).catch((error: Error) => {
        log(`fault failed: ${describe(fault)}: ${error.message.split('\n')[0]}`);
        return { fault, startedAt: Date.now(), endedAt: Date.now(), resolved: fault.target, note: `failed: ${error.message.split('\n')[0]}` };
      }));
    }
    await sleep(Math.max(0, faultStart + faultMs - Date.now()));
    // calm: every fault healed; heaps are measured once the cluster settled
    const calmFrom = Date.now();
    const settled = await cluster.settled(30_000);
    log(`calm phase: ${settled ? `master ${cluster.master()?.name}` : 'NO single master 30 s after the last fault'}`);
    const heapFrom = Date.now();
    // a broker restarted late in the faults is measured once warm, for minMeasureMs at least
    const warmBy = Math.max(...cluster.brokers.map((b) => b.startedAt)) + HEAP_RULE.warmMs;
    const calmTo = Math.max(calmFrom + calmMs, warmBy + HEAP_RULE.minMeasureMs);
    if (calmTo > calmFrom + calmMs) log(`calm phase ${Math.round((calmTo - calmFrom) / 1000)} s instead of ${calmMs / 1000} s: a broker restarted ${Math.round((calmFrom - warmBy + HEAP_RULE.warmMs) / 1000)} s before it warms up first`);
    await sleep(Math.max(0, calmTo - Date.now()));
    const heapTo = Date.now();

    workload.child.stdin!.write('finish\n');
    // sends answered (sendTimeout), deliveries awaited (60 s), the final replay (120 s at most)
    const finishBy = Date.now() + SEND_TIMEOUT_MS + 240_000;
    while (!done) {
      if (!workload.alive) throw new Error('harness: the client process exited before it wrote what it recorded');
      if (Date.now() > finishBy) throw new Error('harness: the client process did not finish');
      await sleep(250);
    }
    log('client process done; reading the queues');
    const recorded = JSON.parse(readFileSync(out, 'utf8')) as Recorded;
    // queues empty: what is left in flight settles within seconds; 30 s at most
    const emptyBy = Date.now() + 30_000;
    let held = await cluster.held();
    while (!allEmpty(held) && Date.now() < emptyBy) {
      await sleep(500);
      held = await cluster.held();
    }

    log('queues read; checking');
    // every sample beside the data, for reading a failed check afterwards (heap, lag, roles)
    writeFileSync(join(cluster.dir, 'samples.json'), JSON.stringify({ heapFrom, heapTo, startedAt: Object.fromEntries(cluster.brokers.map((b) => [b.name, b.startedAt])), samples: Object.fromEntries(cluster.samples) }));
    const verdicts: Verdict[] = [
      ...checkMessages(recorded, faults, epochChanges(cluster.samples), 2 * PREFETCH),
      ...checkOneDeliverer(cluster.samples, SAMPLE_MS),
      { check: 'queues empty at the end', ok: allEmpty(held), detail: JSON.stringify(held) },
      ...checkHeap(cluster.samples, heapFrom, heapTo, HEAP_RULE, new Map(cluster.brokers.map((b) => [b.name, b.startedAt]))),
    ];
    const broken = runs.filter((run) => run.note.startsWith('failed'));
    verdicts.push({ check: 'every fault ran and healed', ok: broken.length === 0, detail: broken.length ? broken.map((run) => `${describe(run.fault)}: ${run.note}`).join('; ') : `${runs.length} faults` });
    if (!settled) verdicts.push({ check: 'a master after the faults', ok: false, detail: 'no single master 30 s after the last fault healed' });
    if (Object.keys(recorded.errors).length) log(`client errors (counted, not checked): ${JSON.stringify(recorded.errors)}`);
    const failed = verdicts.filter((v) => !v.ok);
    log(`result for seed ${options.seed}: ${failed.length === 0 ? 'PASS' : `FAIL (${failed.length} checks)`}`);
    for (const v of verdicts) log(`  ${v.ok ? 'ok  ' : 'FAIL'} ${v.check}: ${v.detail}`);
    if (failed.length) log(`replay it: npm run nemesis -- --seed ${options.seed} --minutes ${options.minutes}`);
    return { seed: options.seed, schedule: faults, runs, verdicts, failed };
  } catch (error) {
    for (const broker of cluster.brokers) log(`--- ${broker.name} log tail:\n${broker.process?.tail(2000) ?? '(not started)'}`);
    throw error;
  } finally {
    await workload?.kill();
    await cluster.destroy();
  }
}

function allEmpty(held: Record<string, Record<string, number> | string>): boolean {
  return Object.values(held).every((q) => typeof q !== 'string' && Object.values(q).every((n) => n === 0));
}
