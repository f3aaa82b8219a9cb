import { expect, test } from 'vitest';
import { LEASE_TTL, nextMaster, offsets, status, withTraffic } from '../../support/election-cluster.js';

/**
 * Issue 14: etcd stopped for 12 s under three real broker processes with a steady producer and
 * two consumers: the master steps down before its lease can expire, nobody delivers while etcd
 * is down, nothing is lost, delivery resumes when etcd is back. In a file of its own so that its
 * waiting runs beside the other election tests, not after them. Prints sent / lost / duplicated /
 * time to the new master's first delivery. 12 s is 6 lease TTLs (2 s) and about 24 rounds of
 * each broker against a dead etcd: the step-down comes within one TTL and a master that stepped
 * down has had many rounds in which to deliver again; it was 30 s, 18 s longer for the suite.
 * The producer's sendTimeout is shorter than the outage, as 30 s was with the default 30 s: sends
 * of the outage's first seconds are answered E_NO_MASTER with storedBy, and must still be
 * delivered once etcd is back.
 */
const ETCD_DOWN_MS = 12_000;
const SEND_TIMEOUT_MS = 8_000;

test(`etcd killed for ${ETCD_DOWN_MS / 1000} s: the master steps down before its lease can expire, nobody delivers, nothing lost, delivery resumes`, async () => {
  const { nodes, master, traffic, etcd } = await withTraffic(SEND_TIMEOUT_MS);
  const from = master.process!.output().length;
  // sends wait in the producer until a master answers (sendTimeout 8 s), within its
  // maxBufferedMessages (10,000): 200 messages/s while etcd is down stays under that bound
  traffic.pause();
  traffic.run(1);
  await etcd.kill();
  const killedAt = performance.now();
  await master.process!.waitFor(/not delivering: this broker acts as slave/, from, LEASE_TTL * 1000 + 5_000);
  const steppedDownMs = performance.now() - killedAt;
  expect((await status(master)).election).toMatchObject({ phase: 'etcd-unreachable' });
  // frames already on their way may still land; after that, nobody delivers (first deliveries or again)
  const quietFrom = performance.now() + 300;
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, killedAt + ETCD_DOWN_MS - performance.now())));
  const deliveredWhileDown = traffic.deliveredAt.filter((at) => at > quietFrom).length;
  const restartFrom = offsets(nodes);
  await etcd.restart();
  const backAt = performance.now();
  const next = await nextMaster(nodes, restartFrom, 15_000);
  const resumedMs = await traffic.firstConsumedAfter(backAt, 15_000, 'a delivery once etcd is back');
  await traffic.sendMore(500);
  const { sent, lost, duplicated } = await traffic.settle(60_000);
  console.log(
    `election etcd down ${ETCD_DOWN_MS / 1000} s: ${sent} sent, ${traffic.succeeded.size} succeeded, ${traffic.storedBySlave.size} E_NO_MASTER but stored, ${traffic.failed.length} failed, ` +
      `lost ${lost}, ${duplicated} delivered twice (window ${traffic.inFlightWindow}), master stepped down ${steppedDownMs.toFixed(0)} ms after etcd died ` +
      `(lease ${LEASE_TTL * 1000} ms), ${deliveredWhileDown} delivered while down, ${next.serviceId} delivers ${resumedMs.toFixed(0)} ms after etcd is back`,
  );
  expect(steppedDownMs).toBeLessThan(LEASE_TTL * 1000);
  expect(deliveredWhileDown).toBe(0);
  expect(traffic.failed.slice(0, 5)).toEqual([]);
  expect(traffic.failed.length).toBe(0);
  expect(traffic.storedBySlave.size, 'sends answered E_NO_MASTER with storedBy while etcd was down').toBeGreaterThan(0);
  expect(lost).toBe(0);
  expect(duplicated).toBeLessThanOrEqual(traffic.inFlightWindow);
}, 120_000);

