import { describe, expect, test } from 'vitest';
import { History } from '../../../src/broker/history/history.js';
import { makeStoredMessage, type StoredMessage } from '../../../src/broker/store/store.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { tempDir } from '../../support/harness.js';
import { streamCatchUp } from '../../support/history-catch-up.js';

/**
 * Two mirrors' histories (real files, the History class each broker has) driven by one seeded
 * random schedule of what the mirror and router code asks of them: one producer's sends to both
 * (answered by whichever acts as master), fences, elections (in step, or catching up: clients'
 * copies held until its hold ends), syncs (the master's history catch-up, some cut short after
 * 0 or 1 frames, some after a whole catch-up but before their end), the master's feed naming
 * what it stored to an in-step slave, a master catching up naming its held copies in a sync's
 * feed when its hold ends, and replays asked
 * of the master. It checks what docs/protocol.md#replay and #history-catch-up promise: a master's
 * replay holds every send answered before it, once, in send order; at the end (one master, the
 * other synced with it) both histories hold every answered send once, in send order.
 * Not modelled: kill -9, peers' offers of messages one broker alone has, the hold's time bounds.
 * `FZ_SEEDS=200` runs more seeds, `FZ_FROM` the first; `FZ_LOG=1` prints a failing seed's
 * schedule, `FZ_DUMP=step` both histories after each step from there on.
 */
const QUEUE = 'mf/v1';
/** seeds that found faults (kept in every run; schedules that found them before the model changed): 153 and 199, a join after catch-ups cut short (catch-up-cut-short.test.ts) */
const FOUND = [153, 199];
const retention = () => ({ seconds: 3_600 });
/**
 * `FZ_CATCHING_SYNCS=1`: syncs with a master still catching up too (its hold may end during the
 * sync: the shape of atk27k F3, catch-up-feed-brought.test.ts). Off by default: it still finds
 * order breaks (seeds 11 and 153 of 1-30, 131-207 records): the view of a master catching up
 * lacks the records its history holds (its side line's recent ones, taken back off the disk when
 * it was elected, and its clients' copies). Its feed names only the messages its router held:
 * the follower's own copies of the others wait for a naming that never comes (30 s, then written
 * after newer ones: seed 11), and what the follower had newer than the catch-up's newest record
 * stays before it at the join (seed 153; moved after when the cut-short rule is applied to every
 * last catch-up, which seed 11 still breaks). Not fixed: see issue 27's note of 2026-12-08.
 */
const CATCHING_SYNCS = process.env.FZ_CATCHING_SYNCS === '1';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** records after one with a higher message number (one producer: send order is number order) */
function orderBreaks(list: readonly string[], only: ReadonlySet<string>): number {
  let max = -1;
  let breaks = 0;
  for (const id of list) {
    if (!only.has(id)) continue;
    const k = Number(id.slice(1));
    if (k < max) {
      if (breaks === 0 && process.env.FZ_LOG) console.log(`first break: m${k} after m${max}`);
      breaks++;
    }
    else max = k;
  }
  return breaks;
}

/** ids as runs of consecutive numbers: m0-17 m20-30 */
function runs(list: readonly string[]): string {
  const out: string[] = [];
  let from = -2;
  let to = -2;
  for (const id of list) {
    const k = Number(id.slice(1));
    if (k === to + 1) to = k;
    else {
      if (from >= 0) out.push(from === to ? `${from}` : `${from}-${to}`);
      from = to = k;
    }
  }
  if (from >= 0) out.push(from === to ? `${from}` : `${from}-${to}`);
  return out.join(' ');
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
type Role = 'master' | 'catching' | 'slaveOut' | 'slaveIn';

async function ids(history: History, wholeWithinMs?: number): Promise<{ ids: string[]; whole: boolean }> {
  const got: string[] = [];
  const whole = await history.read(QUEUE, {}, (record) => {
    got.push(record.messageId);
    return true;
  }, wholeWithinMs);
  return { ids: got, whole };
}

async function run(seed: number, steps: number): Promise<string[]> {
  const random = rng(seed);
  // held: the clients' copies its router holds out of its queues (catching up, or in step until its master's feed names them)
  const brokers = [0, 1].map(() => ({ history: new History(tempDir('whisker-mf-'), retention, createLogger('silent'), Date.now), role: 'slaveOut' as Role, stored: new Set<string>(), held: [] as StoredMessage[] }));
  for (const b of brokers) await b.history.open();
  brokers[0]!.role = 'master';
  await brokers[0]!.history.inStep();
  await brokers[1]!.history.outOfStep();
  let seq = 0;
  let n = 0;
  const batch = (k: number): StoredMessage[] => Array.from({ length: k }, () => makeStoredMessage(++seq, { messageId: `m${n++}`, queue: QUEUE, id: 'k', data: { n, pad: 'x'.repeat(200) }, created: Date.now(), acceptedAt: Date.now(), from: 'p' }));
  const answered: string[] = [];
  const pending: Promise<unknown>[] = [];
  const problems: string[] = [];
  const log: string[] = [];
  /** the master's writes in order, not yet named to the follower by its feed */
  let feed: StoredMessage[] = [];
  let lastMaster = 0;
  const master = () => brokers.findIndex((b) => b.role === 'master' || b.role === 'catching');
  for (let step = 0; step < steps; step++) {
    const m = master();
    const r = random();
    if (r < 0.45) {
      const messages = batch(1 + Math.floor(random() * 20));
      log.push(`${step} send ${messages[0]!.messageId}..${messages.at(-1)!.messageId}, master ${m}`);
      brokers.forEach((b, i) => {
        const done = b.history.append(messages, true).then(() => {
          for (const x of messages) b.stored.add(x.messageId);
          if (i === m) answered.push(...messages.map((x) => x.messageId));
        });
        pending.push(done);
      });
      // a master queues them (its feed names them); the others hold them
      for (const [i, b] of brokers.entries()) {
        if (b.role !== 'master') b.held.push(...messages);
        else if (i === m) feed.push(...messages);
      }
    } else if (r < 0.52 && m >= 0) {
      log.push(`${step} ${m} fenced`);
      brokers[m]!.role = 'slaveOut';
      pending.push(brokers[m]!.history.outOfStep());
    } else if (r < 0.6 && m < 0) {
      const e = Math.floor(random() * 2);
      const b = brokers[e]!;
      const catching = b.role === 'slaveOut' || random() < 0.5;
      log.push(`${step} ${e} elected ${catching ? 'catching up' : 'in step'} (was ${b.role})`);
      b.role = catching ? 'catching' : 'master';
      pending.push(b.history.inStep(catching));
      // the feed a slave gets is its master's: a fenced master elected again keeps naming what it made
      if (e !== lastMaster) feed = [];
      // promoted in step: what it held for its old master's naming is queued, not named to followers
      if (!catching) b.held = [];
      lastMaster = e;
    } else if (r < 0.66 && m >= 0 && brokers[m]!.role === 'catching') {
      log.push(`${step} ${m} hold ends`);
      brokers[m]!.role = 'master';
      feed.push(...brokers[m]!.held.splice(0));
      pending.push(brokers[m]!.history.inStep());
    } else if (r < 0.72 && m >= 0 && (brokers[m]!.role === 'master' || CATCHING_SYNCS)) {
      const f = 1 - m;
      const follower = brokers[f]!;
      if (follower.role !== 'slaveOut') continue;
      // a sync: the master's history caught up, then the follower in step (the feed from now)
      const cut = random() < 0.2 ? Math.floor(random() * 2) : undefined;
      log.push(`${step} ${f} syncs with ${m}${cut !== undefined ? ` (cut after ${cut} frames)` : ''}`);
      await Promise.all(pending.splice(0));
      try {
        await streamCatchUp(brokers[m]!.history, follower.history, cut !== undefined ? { cut } : {});
      } catch {
        continue;
      }
      if (cut !== undefined) continue;
      for (const q of [QUEUE]) await follower.history.catchUpEnd(q);
      // the sync's feed (before `done`): a master catching up whose hold ends now names what it
      // held, which its history may have had at the view (written at a fence): atk27k F3
      if (brokers[m]!.role === 'catching' && random() < 0.5) {
        log.push(`${step} ${m} hold ends during the sync: its feed names ${brokers[m]!.held.length}`);
        brokers[m]!.role = 'master';
        await brokers[m]!.history.inStep();
        const named = brokers[m]!.held.splice(0);
        await follower.history.catchUpFeed(named);
        const ids = new Set(named.map((x) => x.messageId));
        follower.held = follower.held.filter((x) => !ids.has(x.messageId));
        for (const x of named) follower.stored.add(x.messageId);
      }
      // the catch-up whole, its sync's end cut (the master fenced before `done`)
      if (random() < 0.15) {
        log.push(`${step} ${f}'s sync cut after its catch-up`);
        continue;
      }
      if (brokers[m]!.role === 'catching') continue; // in step only with a master whose hold ended
      follower.role = 'slaveIn';
      pending.push(follower.history.inStep(true));
      feed = [];
      // the sync named what its master stored: the rest waits for the feed
      follower.held = follower.held.filter((x) => !brokers[m]!.stored.has(x.messageId));
    } else if (r < 0.8 && m >= 0 && brokers[m]!.role === 'master' && brokers[1 - m]!.role === 'slaveIn') {
      const follower = brokers[1 - m]!;
      // the feed names what the master stored, in its order (client copies the follower has stored)
      let k = 0;
      while (k < feed.length && brokers[m]!.stored.has(feed[k]!.messageId) && follower.stored.has(feed[k]!.messageId) && k < 30) k++;
      const named = feed.splice(0, k);
      const ids = new Set(named.map((x) => x.messageId));
      follower.held = follower.held.filter((x) => !ids.has(x.messageId));
      log.push(`${step} feed names ${named.length}`);
      if (named.length > 0) pending.push(follower.history.place(named, () => false));
    } else if (r < 0.9 && m >= 0) {
      const before = new Set(answered);
      const asked = step;
      log.push(`${step} replay asked of ${m}`);
      pending.push(
        (async () => {
          const got = await ids(brokers[m]!.history, 1_000);
          if (!got.whole) return;
          const set = new Set(got.ids);
          const lacking = [...before].filter((id) => !set.has(id));
          if (lacking.length > 0) problems.push(`seed ${seed} step ${asked}: replay of ${m} lacks ${lacking.length} of ${before.size} answered (${lacking.slice(0, 5).join(',')})`);
          if (set.size !== got.ids.length) problems.push(`seed ${seed} step ${asked}: replay of ${m} has ${got.ids.length - set.size} twice`);
          if (orderBreaks(got.ids, before) > 0) problems.push(`seed ${seed} step ${asked}: replay of ${m} has ${orderBreaks(got.ids, before)} order breaks`);
        })(),
      );
    }
    if (process.env.FZ_DUMP && step >= Number(process.env.FZ_DUMP)) {
      await Promise.all(pending.splice(0));
      for (const [i, b] of brokers.entries()) log.push(`   ${i} ${b.role}: ${runs((await ids(b.history)).ids)}`);
    }
    if (random() < 0.3) await sleep(Math.floor(random() * 3));
    else await new Promise<void>((resolve) => setImmediate(resolve));
  }
  await Promise.all(pending.splice(0));
  // the end: a master in step, the other synced with it and fed all
  let m = master();
  if (m < 0) {
    m = 0;
    brokers[0]!.role = 'master';
  }
  await brokers[m]!.history.inStep();
  const f = 1 - m;
  if (brokers[f]!.role !== 'slaveOut') await brokers[f]!.history.outOfStep();
  await streamCatchUp(brokers[m]!.history, brokers[f]!.history);
  await brokers[f]!.history.catchUpEnd(QUEUE);
  await brokers[f]!.history.inStep();
  for (const [i, b] of brokers.entries()) {
    const got = (await ids(b.history)).ids;
    const set = new Set(got);
    const lacking = answered.filter((id) => !set.has(id));
    if (lacking.length > 0) problems.push(`seed ${seed} final ${i}${i === m ? ' (master)' : ''}: lacks ${lacking.length} answered (${lacking.slice(0, 5).join(',')})`);
    if (set.size !== got.length) problems.push(`seed ${seed} final ${i}: ${got.length - set.size} twice`);
    if (orderBreaks(got, new Set(answered)) > 0) problems.push(`seed ${seed} final ${i}: ${orderBreaks(got, new Set(answered))} order breaks`);
    await b.history.close();
  }
  if (process.env.FZ_LOG && problems.length > 0) console.log(log.join('\n'));
  return problems;
}

describe('two mirrors\' histories under random role changes (real files)', () => {
  test('every replay of a master holds what was answered before it; the end: both whole', async () => {
    const problems: string[] = [];
    const from = Number(process.env.FZ_FROM ?? 1);
    const seeds = Array.from({ length: Number(process.env.FZ_SEEDS ?? 6) }, (_, k) => from + k);
    for (const seed of new Set([...seeds, ...(process.env.FZ_FROM ? [] : FOUND)])) problems.push(...(await run(seed, 300)));
    expect(problems).toEqual([]);
  }, 600_000);
});
