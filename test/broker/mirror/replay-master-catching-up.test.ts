import { afterEach, describe, expect, test } from 'vitest';
import { startProcess } from '../../support/broker-process.js';
import { connect } from '../../support/harness.js';
import { configureMirror, type MirrorNode, mirrorNodes, replayKeys, stopMirrorNodes } from '../../support/mirror-nodes.js';

/**
 * Outside check atk27h, H1: a master still catching up (elected, or started as master, while its
 * peers' offers may hold sends it lacks) keeps the clients' copies it stores out of its queues
 * and its history until its peers' offers are in (docs/operations.md#catching-up). A replay asked
 * of it meanwhile read the history without them: sends this master had answered OK were missing
 * (29,226 for ~5 s in H1). docs/protocol.md#replay: "A broker acting as master ... its replay
 * holds every send answered before it". Here the peer b is frozen (SIGSTOP), so the master a,
 * started as configured master, waits out its bound (5 s) for b's offer.
 */
const CHANNEL = 'rt/v1/x';
let nodes: MirrorNode[] = [];

afterEach(async () => {
  await stopMirrorNodes(nodes);
  nodes = [];
});

describe('a replay asked of a master still catching up', () => {
  test('holds every send that master answered before the replay was asked', async () => {
    nodes = await mirrorNodes('replay-catching-up', ['a', 'b']);
    const [a, b] = nodes as [MirrorNode, MirrorNode];
    const extra = { channels: { 'rt/v1': { retention: { seconds: 3600 } } } };
    b.process = await startProcess(configureMirror(b, nodes, false, extra));
    // b frozen: a's link to it cannot end its offer; a waits out its bound
    b.process.child.kill('SIGSTOP');
    a.process = await startProcess(configureMirror(a, nodes, true, extra), { startTimeoutMs: 30_000 });
    await a.process.waitFor(/master while catching up/, 0, 10_000);

    const producer = await connect('h1-producer', a.spec, { sendTimeout: 3_000 });
    const answered: number[] = [];
    for (let k = 0; k < 20; k++) {
      await producer.send(CHANNEL, { k });
      answered.push(k);
    }
    await producer.disconnect();
    const stillWaiting = !/no longer wait for the peers' offers|every awaited peer ended/.test(a.process.output());
    const replayed = await replayKeys(a, CHANNEL);
    console.log(`H1: a answered ${answered.length} sends while catching up (still waiting for b's offer when the replay was asked: ${stillWaiting}); its replay: ${replayed.length} records`);
    expect(stillWaiting, 'the replay was asked while a still waited for its peer').toBe(true);
    expect(answered.filter((k) => !replayed.includes(k)), 'sends a answered OK, missing from its replay').toEqual([]);
  }, 60_000);
});
