import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { compilePolicy } from '../../../src/broker/access/policy.js';
import { Lifecycle } from '../../../src/broker/lifecycle.js';
import { Router } from '../../../src/broker/messages/router.js';
import { InStepLog } from '../../../src/broker/mirror/in-step-log.js';
import { KeySync } from '../../../src/broker/mirror/key-sync.js';
import { Peers } from '../../../src/broker/mirror/peers.js';
import { Replica } from '../../../src/broker/mirror/replica.js';
import { KeyRegistry } from '../../../src/broker/session/keys.js';
import { MemoryStore } from '../../../src/broker/store/memory.js';
import { loadOrCreateKeys } from '../../../src/link/keys.js';
import { type BrokerFrame, type ClientFrame, decodeClientFrame, encodeFrame, PROTOCOL_VERSION } from '../../../src/protocol/frames.js';
import { createLogger } from '../../../src/runtime/logger.js';
import { brokerConfig, tempDir } from '../../support/harness.js';

/**
 * A slave's link to an elected master whose sync ends while the link drops (atk27e E1): the
 * epoch it is in step with must be the one of the master whose sync it finished, not what its
 * link knows of the peer after the drop (nothing). The master is a hand-driven WebSocket server.
 */
const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

const until = async (what: () => boolean, ms = 5_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!what()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

/** a master `a` of epoch 7: it answers the first `follow` with a sync `done`, and lets only one link in */
async function fakeMaster() {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const sockets: WebSocket[] = [];
  const received: ClientFrame[] = [];
  const send = (ws: WebSocket, frame: BrokerFrame) => ws.send(encodeFrame(frame));
  server.on('connection', (ws) => {
    sockets.push(ws);
    ws.on('message', (data) => void received.push(decodeClientFrame(data.toString())));
    // a redial after the drop finds a master that says nothing: the slave cannot sync again
    if (sockets.length > 1) return;
    send(ws, { type: 'hello', protocol: PROTOCOL_VERSION, nonce: 'n0nce-0123456789', serviceId: 'a', isMaster: true });
    ws.on('message', (data) => {
      const frame = decodeClientFrame(data.toString());
      if (frame.type === 'auth') {
        send(ws, { type: 'welcome', node: 'a-node', serviceId: 'a', isMaster: true, maxPayloadBytes: 1_048_576, epoch: 7 });
        send(ws, { type: 'peerState', serviceId: 'a', configuredMaster: true, isMaster: true, epoch: 7, keys: true, resumes: true });
      } else if (frame.type === 'follow') {
        send(ws, { type: 'sync', messages: [], removed: [], done: true });
      }
    });
  });
  const { port } = server.address() as { port: number };
  closing.push(async () => {
    for (const ws of sockets) ws.terminate();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { spec: `127.0.0.1:${port}@a`, sockets, received };
}

function slave() {
  const log = createLogger('silent');
  const lifecycle = new Lifecycle();
  const router = new Router({ policy: compilePolicy(brokerConfig({ defaultPolicy: 'allow' })), store: new MemoryStore(), log, now: Date.now, lifecycle });
  const inStepLog = new InStepLog(join(tempDir(), 'in-step.json'), Date.now);
  const replica = new Replica(router, true, inStepLog);
  const keySync = new KeySync({ registry: new KeyRegistry(tempDir()), log, isMaster: () => false, delivers: () => false, links: () => [], closeSessions: () => 0 });
  const peers = new Peers(
    { serviceId: 'b', dialOptions: () => ({ tls: undefined, heartbeatTimeoutMs: 5_000 }), keys: loadOrCreateKeys(tempDir(), 'b'), log, replica, keySync, backlogBytes: () => 16 * 1_048_576, onRoleChange: () => undefined, onStateChange: () => undefined },
    lifecycle,
  );
  closing.push(async () => {
    await peers.close();
    inStepLog.close();
  });
  return { peers, replica, inStepLog };
}

/** the slave's end of the sync waits at `step` (a loaded host: 1 s in the attack's log) until released */
function holdAt(replica: Replica, step: 'historyInStep' | 'heldOnlyHere') {
  let reached = false;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const original = replica[step].bind(replica) as (...args: unknown[]) => Promise<unknown>;
  (replica as unknown as Record<string, unknown>)[step] = async (...args: unknown[]) => {
    reached = true;
    await released;
    return original(...args);
  };
  return { reached: () => reached, release: () => release() };
}

describe('the epoch a slave is in step with (atk27e E1)', () => {
  test.each([
    ['its history joins the catch-up', 'historyInStep', []],
    ['it reads what to offer', 'heldOnlyHere', [{ master: 'a', epoch: 7 }]],
  ] as const)("the master's link drops while %s at the end of its sync: in step with that master's epoch, no in-step stretch after the drop, nothing offered", async (_, step, stretches) => {
    const master = await fakeMaster();
    const { peers, replica, inStepLog } = slave();
    const hold = holdAt(replica, step);
    peers.configure([master.spec], false);
    await until(hold.reached);
    // the link drops there (the attack: lost under load), before the slave's `in step`
    master.sockets[0]!.terminate();
    await until(() => peers.status()[0]?.connected === false);
    // its redial is open, not logged in
    await until(() => master.sockets.length === 2);
    hold.release();
    await until(() => peers.status()[0]?.syncs === 1);
    await peers.applied();
    // the sync of the master of epoch 7 finished here: it may campaign when that master dies
    expect(peers.inStepEpoch).toBe(7);
    // in step from the end of the sync to the drop at most: nothing claims more (a stretch too
    // long would let a later sync forget messages this broker alone holds)
    expect(inStepLog.intervals().map(({ master: m, epoch }) => ({ master: m, epoch }))).toEqual(stretches);
    expect(peers.status()[0]?.inStep).toBe(false);
    // nothing offered on a link that dropped, nor on the next one before it follows again
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(master.received.filter((frame) => frame.type === 'offer')).toEqual([]);
  });
});
