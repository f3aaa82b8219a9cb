// Attack 5b (hostile frames): an authenticated raw client sends `cluster` frames (the broker -> client
// map frame, forged, and malformed variants). Promise (protocol.md "Cluster" Checks; issue 31 §6):
// "A client that sends a `cluster` frame is closed with `E_PROTOCOL`"; malformed or hostile cluster
// frames "change nothing". After them: the forged placement is not in etcd (cluster status), and a
// real client still works. Prints HELD/BROKEN.
// Opt-in (not part of npm test): ATK31=1 nice -n 10 npx vitest run test/attacks-31/attack5b-frames.test.ts
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { clusterProcesses } from '../support/cluster-processes.js';
import { startEtcd } from '../support/etcd.js';
import { newKeyPair, RawPeer } from '../support/raw-peer.js';

const root = join(import.meta.dirname, '..', '..');

test.skipIf(!process.env.ATK31)('cluster frames from a client are E_PROTOCOL and change nothing', async () => {
  const etcd = await startEtcd();
  const sets = await clusterProcesses(etcd.url, { a: ['a1'], b: ['b1'] });
  const a1 = sets.get('a')![0]!;
  await new Promise((r) => setTimeout(r, 4000));
  const frames: unknown[] = [
    { type: 'cluster', set: 'a', full: true, sets: [{ name: 'evil', hosts: ['127.0.0.1:1@x'] }], placed: [['evil/v1', 'evil']], removed: [] },
    { type: 'cluster', set: 'b', full: false, placed: [['evil2/v1', 'b']], removed: ['evil3/v1'] },
    { type: 'cluster', set: '../../x', full: 'yes', sets: 5, placed: [[1, 2, 3]], removed: null },
    { type: 'cluster', set: 'a'.repeat(100000), full: true, sets: Array.from({ length: 2000 }, (_, i) => ({ name: `s${i}`, hosts: [] })), placed: [] },
    { type: 'cluster' },
  ];
  const results: string[] = [];
  let broken: string[] = [];
  for (const [i, frame] of frames.entries()) {
    const peer = await RawPeer.open(a1.port);
    const welcome = await peer.authenticate(`hostile${i}`, { keys: newKeyPair() });
    if (!('type' in welcome) || welcome.type !== 'welcome') { broken.push(`frame ${i}: auth refused ${JSON.stringify(welcome)}`); continue; }
    peer.sendJson(frame);
    let code = 'none';
    try { code = (await peer.error()).code; } catch (e) { code = `no error frame (${(e as Error).message})`; }
    const closed = await Promise.race([peer.closed.then(() => true), new Promise((r) => setTimeout(() => r(false), 5000))]);
    results.push(`frame ${i}: ${code}, closed ${closed}`);
    if (code !== 'E_PROTOCOL' || !closed) broken.push(`frame ${i}: ${code}, closed ${closed}`);
  }
  const status = execFileSync(process.execPath, [join(root, 'bin', 'whisker'), 'cluster', 'status', '--placements', '-c', a1.configPath], { encoding: 'utf8' });
  if (/evil/.test(status)) broken.push(`forged placement visible: ${status}`);
  if (!/^a\s/m.test(status) || !/^b\s/m.test(status)) broken.push(`sets changed: ${status}`);
  console.log(results.join('\n'));
  console.log(status.trim());
  console.log(broken.length ? `BROKEN: ${broken.join('; ')}` : 'HELD');
  broken = broken.filter(Boolean);
  expect(broken).toEqual([]);
}, 120_000);
