/* eslint-disable no-undef, @typescript-eslint/no-unused-vars */
// The atk27h scripts reuse atk27g's pieces (which re-export atk27e's and the attacks harness), plus keepData():
// on a BROKEN verdict the brokers are killed and their directories copied to KEEP_DATA (default /tmp/atk27h/data/<pid>)
// before finish() removes the temp dir. A copy that fails is reported and finish() still
// runs (it writes the broker logs to ATTACK_LOGS).
export * from '../attacks-27g/common.mjs';
import { base, cleanup, sleep } from '../attacks/harness.mjs';
import { cpSync, mkdirSync, lstatSync } from 'node:fs';
export async function keepData(name = String(process.pid)) {
  const dest = process.env.KEEP_DATA ?? `/tmp/atk27h/data/${name}`;
  await cleanup(); await sleep(500);
  // the control socket (data/whisker.sock) cannot be copied: g2-heavy-3's copy failed on it, and its logs were lost
  const noSocket = (p) => { try { return !lstatSync(p).isSocket(); } catch { return false; } };
  try { mkdirSync(dest, { recursive: true }); cpSync(base, dest, { recursive: true, filter: noSocket }); console.log('data kept in', dest); }
  catch (e) { console.log('data NOT kept:', e.message); }
  return dest;
}
