/* eslint-disable no-undef, no-empty, @typescript-eslint/no-unused-vars -- outsider attack scripts (issue 27) */
// Issue 27 item 2, the CLI side: `whisker status` during an etcd outage prints degraded, the reason naming etcd, and
// an election line with phase etcd-unreachable (SPEC §9: /health and whisker status say degraded).
import { makeNodes, start, cli, sleep, port, check, finish, electionBlock } from './harness.mjs';
const nodes = await makeNodes(['a'], { election: electionBlock(`http://127.0.0.1:${await port()}`, '/atk27/a2b', 2) });
await start(nodes[0]); await sleep(2500);
const r = await cli(nodes[0], 'status');
const j = await cli(nodes[0], 'status', '--json');
let json = null; try { json = JSON.parse(j.out.slice(j.out.indexOf('{'))); } catch {}
check('2e whisker status: degraded, reason names etcd, election phase etcd-unreachable (text and --json)',
  /degraded/.test(r.out) && /etcd/.test(r.out) && /etcd-unreachable/.test(r.out) && json?.election?.phase === 'etcd-unreachable',
  { exit: r.code, text: r.out.split('\n').slice(0, 8).join(' | ').slice(0, 500), jsonPhase: json?.election?.phase, jsonStatus: json?.status });
await finish(0);
