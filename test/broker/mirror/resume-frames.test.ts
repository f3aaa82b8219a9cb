import { describe, expect, test } from 'vitest';
import { type PeerStateFrame, type SyncFrame } from '../../../src/protocol/frames.js';
import { broker, connect } from '../../support/harness.js';
import { newKeyPair, RawPeer } from '../../support/raw-peer.js';

/**
 * `follow` with `resume` on the wire (docs/protocol.md#a-master-fenced-and-elected-again): a master
 * resumes only the feed it kept for that link since it was fenced. A follower it kept nothing for
 * (a new link: the old one closed, or never in step) is told `resumed: false` and nothing else,
 * then syncs in full as before.
 */
const keys = newKeyPair();

const follower = (port: number, serviceId: string): Promise<RawPeer> => RawPeer.follower(port, serviceId, keys);

describe('follow with resume', () => {
  test('a master that kept no feed for the link answers resumed: false, then a plain follow gets the whole sync', async () => {
    const master = await broker({ serviceId: 'm', peers: ['127.0.0.1:9@raw'], defaultPolicy: 'allow' });
    const producer = await connect('resume-producer', master.hostSpec);
    await Promise.all(Array.from({ length: 50 }, (_, i) => producer.send('ev/v1/1', { i })));
    await producer.disconnect();

    const peer = await follower(master.port, 'm');
    const state = (await peer.next('peerState')) as PeerStateFrame;
    expect(state).toMatchObject({ isMaster: true, resumes: true });
    peer.sendJson({ type: 'follow', resume: true });
    const answer = (await peer.next('sync')) as SyncFrame;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(answer).toEqual({ type: 'sync', messages: [], removed: [], done: true, resumed: false });
    // nothing else: no sync, no feed (it is not a follower)
    expect(peer.frames.filter((f) => f.type === 'sync' || f.type === 'feed')).toHaveLength(1);

    peer.sendJson({ type: 'follow' });
    await peer.next('sync', (f) => f.done && f.resumed === undefined, 10_000);
    const synced = peer.frames.filter((f): f is SyncFrame => f.type === 'sync' && f.resumed === undefined).flatMap((f) => f.messages);
    expect(synced).toHaveLength(50);
  }, 30_000);
});
