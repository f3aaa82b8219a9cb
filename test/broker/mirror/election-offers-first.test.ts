import { Etcd3 } from 'etcd3';
import { describe, expect, test } from 'vitest';
import { electionCluster, nextMaster, offsets } from '../../support/election-cluster.js';
import { startProcess } from '../../support/broker-process.js';
import { startEtcd } from '../../support/etcd.js';
import { connect } from '../../support/harness.js';

/**
 * Issue 27, B3 (test/attacks-27d/d10): the master of three elected brokers is killed -9 while a
 * connection pipelines numbered sends to every broker; nobody is elected while it is dead (the
 * test rewrites etcd's `last`, so its slaves are not in step with the last master and only it may
 * campaign): its slaves answer E_NO_MASTER and store those sends (`storedBy`). It restarts and is
 * elected again. Its slaves offer it what only they stored once they synced with it; it took the
 * connection's new sends (answered OK) first: the older sends were stored, replayed and first
 * delivered after later OK sends of the same connection. Expected (SPEC §7, "the sends of one
 * connection are accepted in the order sent"): no record comes after a later send answered OK, in
 * any broker's replay and in a listener's first deliveries; nothing lost.
 *
 * Seen failing before the fix (Intake held by the promotion gate, mirror/promotion-gate.ts).
 */
const CHANNEL = 'rt/v1/x';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a master elected again after a window without one (issue 27, B3)', () => {
  test('takes what its slaves stored meanwhile before the new sends of the same connection', async () => {
    const etcd = await startEtcd();
    const prefix = `/whisker/test-b3-${process.pid}-${Date.now()}`;
    const nodes = await electionCluster([etcd.url], ['a', 'b', 'c'], () => ({
      election: { etcd: { hosts: [etcd.url] }, prefix, leaseTtl: 4 },
      heartbeatTimeout: 2,
      channels: { 'rt/v1': { retention: { seconds: 3600 }, maxItemsInQueue: 100_000 } },
    }));
    const master = await nextMaster(nodes);
    const slaves = nodes.filter((n) => n !== master);
    await Promise.all(slaves.map((n) => n.process!.waitFor(/in step with the master/, 0, 15_000)));
    const hosts = nodes.map((n) => n.spec);

    const firsts: number[] = [];
    const seen = new Set<number>();
    const listener = await connect('b3-listener', hosts, { sendTimeout: 5_000 });
    await listener.listen(CHANNEL, (error, data) => {
      const n = (data as { n: number } | undefined)?.n;
      if (!error && n !== undefined && !seen.has(n)) {
        seen.add(n);
        firsts.push(n);
      }
    }).ready;
    const producer = await connect('b3-producer', hosts, { sendTimeout: 1_500, maxBufferedMessages: 100_000 });
    const answers: string[] = [];
    const pending: Array<Promise<void>> = [];
    let running = true;
    const loop = (async () => {
      for (let n = 0; running; n++) {
        pending.push(producer.send(CHANNEL, { n }).then(
          () => void (answers[n] = 'OK'),
          (e: { code: string; info?: { storedBy?: string[] } }) => void (answers[n] = `${e.code}:${(e.info?.storedBy ?? []).join('')}`),
        ));
        await sleep(2);
      }
    })();
    await sleep(1_500);

    // the master dies; its key goes and `last` moves, so its slaves may not campaign (not in step
    // with the last master): only it may, once it is back
    const client = new Etcd3({ hosts: [etcd.url] });
    master.process!.child.kill('SIGKILL');
    await master.process!.exited;
    const moved = await client.if(`${prefix}/master`, 'Value', '==', master.serviceId).then(client.delete().key(`${prefix}/master`), client.put(`${prefix}/last`).value(master.serviceId)).commit();
    expect(moved.succeeded).toBe(true);
    await sleep(3_000);
    const from = offsets(nodes);
    master.process = await startProcess(master.configPath, { startTimeoutMs: 30_000 });
    from.set(master, 0); // a new process: its output starts empty
    expect(await nextMaster(nodes, from)).toBe(master);
    await sleep(4_000);
    running = false;
    await loop;
    await Promise.all(pending);
    await producer.disconnect();

    // every send a master or slave stored reaches the listener
    const stored = answers.map((a, n) => [a, n] as const).filter(([a]) => a === 'OK' || /^E_NO_MASTER:.+/.test(a)).map(([, n]) => n);
    for (const deadline = Date.now() + 20_000; Date.now() < deadline && !stored.every((n) => seen.has(n)); ) await sleep(200);
    await sleep(1_000);
    await listener.disconnect();

    /** records that come after a later send of the connection answered OK */
    const afterLaterOk = (sequence: readonly number[]) => {
      let highestOk = -1;
      let breaks = 0;
      let example = '';
      for (const n of sequence) {
        if (n < highestOk) {
          breaks++;
          example ||= `${n} (${answers[n]}) after ${highestOk} (OK)`;
        }
        if (answers[n] === 'OK') highestOk = Math.max(highestOk, n);
      }
      return { records: sequence.length, breaks, example };
    };
    const judged: Record<string, ReturnType<typeof afterLaterOk>> = { listener: afterLaterOk(firsts) };
    for (const node of nodes) {
      const reader = await connect(`b3-reader-${node.serviceId}`, [node.spec], { sendTimeout: 20_000 });
      const records: number[] = [];
      for await (const message of reader.replay(CHANNEL, {})) records.push((message.data as { n: number }).n);
      await reader.disconnect();
      judged[node.serviceId] = afterLaterOk(records);
      const inReplay = new Set(records);
      const lacking = stored.filter((n) => !inReplay.has(n));
      if (lacking.length > 0) console.log(`${node.serviceId}'s replay lacks ${lacking.length}: first ${lacking.slice(0, 5).map((n) => `${n}:${answers[n]}`).join(' ')} last ${lacking.slice(-3).map((n) => `${n}:${answers[n]}`).join(' ')}; OK lacking ${lacking.filter((n) => answers[n] === 'OK').length}`);
    }
    const tally: Record<string, number> = {};
    for (const a of answers) tally[a] = (tally[a] ?? 0) + 1;
    const storedByOthers = answers.filter((a) => a.startsWith('E_NO_MASTER:') && !a.includes(master.serviceId)).length;
    console.log(`B3: ${master.serviceId} killed -9, restarted and elected again; answers ${JSON.stringify(tally)}; records after a later OK send: ${Object.entries(judged).map(([who, j]) => `${who} ${j.breaks} of ${j.records}${j.example ? ` (${j.example})` : ''}`).join('; ')}`);
    const lines = (node: (typeof nodes)[number]) => node.process!.output().split('\n').filter((l) => /catching up|no longer wait|offered the master|in step with the master|elected master|delivering|link to peer lost|broker started|not placed/.test(l));
    for (const node of nodes) console.log(`${node.serviceId}:\n${lines(node).map((l) => l.slice(0, 300)).join('\n')}`);
    client.close();
    await etcd.kill();
    // the window without a master happened: sends only the slaves stored
    expect(storedByOthers).toBeGreaterThan(100);
    expect(stored.filter((n) => !seen.has(n)), 'stored sends the listener never got').toEqual([]);
    for (const [who, j] of Object.entries(judged)) expect(j.breaks, `${who}: ${j.example}`).toBe(0);
  }, 90_000);
});
