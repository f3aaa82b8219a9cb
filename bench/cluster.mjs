// `node bench/cluster.mjs [--count=N] [--runs=N]`: the routing cost of a cluster (issue 31).
// One broker process with an election and no cluster block, and one with a one-set cluster too,
// on a real etcd (Debian's etcd, started here), alternated in the same run: one producer and one consumer (an
// in-process client each, 8 queues, a window of 2,000 unanswered sends) pass `count` durable
// messages; the broker's CPU time (utime + stime from /proc) per message is compared.
// Not a timed test: figures for docs/performance.md and the commit message.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { client } from '../dist/index.js';
import { freePort, spawnServer, stopServer, waitForPort } from './servers.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const COUNT = Number(args.count ?? 40_000);
const RUNS = Number(args.runs ?? 3);
const QUEUES = Array.from({ length: 8 }, (_, i) => `cl${i}/v1`);
const TICKS = 100; // USER_HZ on Linux

function cpuMs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
}

async function startEtcd(dir) {
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const proc = spawn('etcd', ['--name', 'e0', '--data-dir', join(dir, 'etcd'), '--listen-client-urls', url, '--advertise-client-urls', url, '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `e0=${peer}`], { stdio: 'ignore' });
  await waitForPort(clientPort, proc, 15_000, 'etcd');
  return { url, proc };
}

async function once(withCluster, etcdUrl) {
  const dir = mkdtempSync(join(tmpdir(), 'whisker-bench-cluster-'));
  const port = await freePort();
  const config = { serviceId: 's1', dataDirectory: 'data', registeredClientsPath: 'clients', keysDirectory: 'keys', logLevel: 'warn', maxItemsInQueue: 1_000_000, socketServer: { host: '127.0.0.1', port } };
  // both with an election (a cluster needs one): the difference is the cluster block alone
  const prefix = `/bench/${Date.now()}`;
  Object.assign(config, { election: { etcd: { hosts: [etcdUrl] }, prefix: `${prefix}-set`, leaseTtl: 5 } });
  if (withCluster) Object.assign(config, { cluster: { prefix, set: 'a', advertise: `127.0.0.1:${port}@s1` } });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  const broker = spawnServer([join(import.meta.dirname, '..', 'bin', 'whisker'), 'start', '-c', join(dir, 'config.json')], dir);
  await waitForPort(port, broker, 30_000, 'broker');
  const hosts = [`127.0.0.1:${port}@s1`];
  const producer = client();
  const consumer = client();
  await Promise.all([producer.connect({ hosts, clientId: 'p', keysDirectory: join(dir, 'pk') }), consumer.connect({ hosts, clientId: 'c', keysDirectory: join(dir, 'ck') })]);
  let received = 0;
  let allIn;
  const done = new Promise((resolve) => (allIn = resolve));
  await Promise.all(QUEUES.map((q) => consumer.consume(`${q}/x`, { prefetch: 100 }, (err, _m, ack) => {
    ack();
    if (++received === COUNT) allIn();
  }).ready));
  // warm-up: the queues placed (etcd) and the master elected before the measure starts
  await Promise.all(QUEUES.map((q) => producer.send(`${q}/x`, { warm: true })));
  received -= QUEUES.length;
  while (received < 0) await new Promise((r) => setTimeout(r, 10));
  received = 0;
  const cpuBefore = cpuMs(broker.pid);
  const startedAt = performance.now();
  let sent = 0;
  let open = 0;
  await new Promise((resolve) => {
    const pump = () => {
      while (open < 2000 && sent < COUNT) {
        const q = QUEUES[sent++ % QUEUES.length];
        open++;
        producer.send(`${q}/x`, { n: sent }, () => {
          open--;
          if (sent < COUNT) pump();
          else if (open === 0) resolve();
        });
      }
    };
    pump();
  });
  await done;
  const seconds = (performance.now() - startedAt) / 1000;
  const cpu = cpuMs(broker.pid) - cpuBefore;
  await Promise.all([producer.disconnect(), consumer.disconnect()]);
  await stopServer(broker);
  rmSync(dir, { recursive: true, force: true });
  return { rate: COUNT / seconds, cpuUsPerMessage: (cpu * 1000) / COUNT };
}

const dir = mkdtempSync(join(tmpdir(), 'whisker-bench-etcd-'));
const etcd = await startEtcd(dir);
const rows = { none: [], cluster: [] };
for (let run = 0; run < RUNS; run++) {
  rows.none.push(await once(false, etcd.url));
  rows.cluster.push(await once(true, etcd.url));
}
etcd.proc.kill('SIGKILL');
rmSync(dir, { recursive: true, force: true });
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [name, list] of Object.entries(rows)) {
  console.log(`${name.padEnd(8)} ${median(list.map((r) => r.rate)).toFixed(0).padStart(7)} msg/s  ${median(list.map((r) => r.cpuUsPerMessage)).toFixed(1).padStart(6)} µs broker CPU per message  (runs: ${list.map((r) => r.cpuUsPerMessage.toFixed(1)).join(', ')})`);
}
const ratio = median(rows.cluster.map((r) => r.cpuUsPerMessage)) / median(rows.none.map((r) => r.cpuUsPerMessage));
console.log(`one-set cluster / election without cluster block, broker CPU per message: ${ratio.toFixed(3)}`);
process.exit(0);
