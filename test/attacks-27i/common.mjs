/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// The atk27i scripts reuse atk27h's pieces (which re-export atk27g's, atk27e's and the attacks harness); keepData() keeps the
// brokers' directories of a BROKEN run under /tmp/atk27i/data/<pid> unless KEEP_DATA names another place (runs/r.sh sets it).
export * from '../attacks-27h/common.mjs';
import { keepData as keep27h } from '../attacks-27h/common.mjs';
import { mkClient, keyPair, sleep } from '../attacks/harness.mjs';
export function keepData(name = String(process.pid)) { process.env.KEEP_DATA ??= `/tmp/atk27i/data/${name}`; return keep27h(name); }

// producers that record, for each send, when it was made (t) and when its answer came (at), with the answer (res):
// P pipelining clients connected to every broker, each sends BURST messages back to back every GAP ms
export async function timedProducers(nodes, ch, { P = 4, burst = 2, gap = 2, sendTimeout = 1500, name = 'p' } = {}) {
  const ps = [];
  for (let i = 0; i < P; i++) {
    const c = await mkClient(nodes, `${name}${i}-${process.pid}`, keyPair(), { sendTimeout });
    const pr = { i, c, res: [], t: [], at: [], pend: [], run: true };
    pr.loop = (async () => {
      let n = 0;
      while (pr.run) {
        for (let b = 0; b < burst; b++) {
          const j = n++; pr.t[j] = Date.now();
          pr.pend.push(new Promise((r) => c.send(ch, { p: i, n: j }, (err) => { pr.at[j] = Date.now(); pr.res[j] = err ? `${err.code}:${(err.info?.storedBy ?? []).join('')}` : 'OK'; r(); })));
        }
        await sleep(gap);
      }
    })();
    ps.push(pr);
  }
  ps.stop = async () => { for (const pr of ps) pr.run = false; for (const pr of ps) { await pr.loop; await Promise.all(pr.pend); } };
  return ps;
}
