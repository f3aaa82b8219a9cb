import type { WhiskerClient } from '../../src/client/client.js';
import type { ChannelString } from '../../src/client/types.js';
import { type BrokerProcess, writeConfig } from './broker-process.js';
import { connect, tempDir } from './harness.js';
import { freePort } from './ports.js';

/** A mirror broker run as a real process by the history catch-up tests: its port and folder stay across restarts */
export interface MirrorNode {
  readonly serviceId: string;
  readonly port: number;
  readonly dir: string;
  readonly spec: string;
  process: BrokerProcess | null;
}

export async function mirrorNodes(prefix: string, names: readonly string[]): Promise<MirrorNode[]> {
  const made: MirrorNode[] = [];
  for (const serviceId of names) {
    const port = await freePort();
    made.push({ serviceId, port, dir: tempDir(`whisker-${prefix}-${serviceId}-`), spec: `127.0.0.1:${port}@${serviceId}`, process: null });
  }
  return made;
}

/** kills each node's broker (stopped ones too: SIGCONT first) and waits for it to exit */
export async function stopMirrorNodes(nodes: readonly MirrorNode[]): Promise<void> {
  for (const node of nodes) {
    node.process?.child.kill('SIGCONT');
    node.process?.child.kill('SIGKILL');
    await node.process?.exited;
  }
}

/** writes `node`'s config.json (peers: every other node), returns its path; `extra` adds or replaces keys */
export function configureMirror(node: MirrorNode, all: readonly MirrorNode[], isMaster: boolean, extra: Record<string, unknown>): string {
  return writeConfig(node.dir, {
    serviceId: node.serviceId,
    isMaster,
    peers: all.filter((other) => other !== node).map((other) => other.spec),
    socketServer: { host: '127.0.0.1', port: node.port },
    maxItemsInQueue: 1_000_000,
    defaultPolicy: 'allow',
    ...extra,
  });
}

/** a retained channel's replay from this broker alone: the `k` of every record, in order */
export async function replayKeys(node: { readonly serviceId: string; readonly spec: string }, channel: ChannelString): Promise<number[]> {
  const reader = await connect(`reader-${node.serviceId}-${Date.now()}`, node.spec);
  try {
    const got: number[] = [];
    await reader.replay(channel, { since: 0 }, (err, msg) => {
      if (err) throw err;
      got.push((msg as { k: number }).k);
    }).done;
    return got;
  } finally {
    await reader.disconnect();
  }
}

/** sends `{ k }` for `count` keys from `from`, in pipelined batches of 200; pushes the `k` of each answered OK */
export async function sendMany(producer: WhiskerClient, channel: ChannelString, from: number, count: number, answered: number[]): Promise<void> {
  for (let k = from; k < from + count; k += 200) {
    const batch = Array.from({ length: Math.min(200, from + count - k) }, (_, i) => k + i);
    const outcomes = await Promise.allSettled(batch.map((n) => producer.send(channel, { k: n })));
    outcomes.forEach((o, i) => o.status === 'fulfilled' && answered.push(batch[i]!));
  }
}
