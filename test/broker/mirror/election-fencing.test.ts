import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { whisker } from '../../support/broker-process.js';
import { LEASE_TTL, nextMaster, offsets, phaseWithin, status, withTraffic } from '../../support/election-cluster.js';

/**
 * Fencing and the planned switch (SPEC §9, issue 14), real etcd and real broker processes: a
 * master frozen past its lease, etcd gone, `whisker step-down`. Each prints sent / lost /
 * duplicated / time to the new master's first delivery.
 */
describe('fencing (real etcd, real broker processes)', () => {
  test('a master stopped (SIGSTOP) for 2 x leaseTtl is fenced when it resumes: no delivery from its old epoch reaches a consumer', async () => {
    const { nodes, master, traffic } = await withTraffic();
    const from = offsets(nodes);
    master.process!.child.kill('SIGSTOP');
    const stoppedAt = performance.now();
    const next = await nextMaster(nodes.filter((n) => n !== master), from);
    const failoverMs = await traffic.firstConsumedAfter(stoppedAt, 15_000, 'a delivery from the new master');
    // the point of the test is a duration: the old master frozen well past its lease
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, stoppedAt + 2 * LEASE_TTL * 1000 - performance.now())));
    const resumedFrom = master.process!.output().length;
    const duplicatesBefore = [...traffic.deliveries.values()].reduce((sum, n) => sum + n - 1, 0);
    master.process!.child.kill('SIGCONT');
    await master.process!.waitFor(/not delivering: this broker acts as slave/, resumedFrom, 10_000);
    await master.process!.waitFor(/in step with the master/, resumedFrom, 15_000);
    await traffic.sendMore(1_000);
    const { sent, lost, duplicated } = await traffic.settle();
    console.log(
      `election SIGSTOP ${2 * LEASE_TTL} s: ${sent} sent, lost ${lost}, ${duplicated} delivered twice (${duplicatesBefore} before SIGCONT, window ${traffic.inFlightWindow}), ` +
        `${traffic.stale} frames of the old epoch ignored by clients, stop to first delivery by ${next.serviceId} ${failoverMs.toFixed(0)} ms`,
    );
    expect(await phaseWithin(master, 'slave')).toMatchObject({ phase: 'slave', leader: next.serviceId });
    expect(lost).toBe(0);
    // what the frozen master had in flight is delivered again by the new one; nothing after SIGCONT
    expect(duplicated).toBe(duplicatesBefore);
    expect(duplicated).toBeLessThanOrEqual(traffic.inFlightWindow);
  }, 120_000);

  test('whisker step-down hands leadership over with zero duplicates', async () => {
    const { nodes, master, traffic } = await withTraffic();
    const from = offsets(nodes);
    const result = await whisker(['step-down', '-c', master.configPath], { timeoutMs: 30_000 });
    expect(result.code, result.stderr).toBe(0);
    const steppedDownAt = performance.now(); // the command returns once the lease is given up
    const next = await nextMaster(nodes.filter((n) => n !== master), from);
    const switchMs = await traffic.firstConsumedAfter(steppedDownAt, 15_000, 'a delivery from the new master');
    await traffic.sendMore(1_000);
    const { sent, lost, duplicated } = await traffic.settle();
    console.log(`election step-down: ${sent} sent, lost ${lost}, ${duplicated} delivered twice, ${master.serviceId} -> ${next.serviceId}, lease given up to first delivery ${switchMs.toFixed(0)} ms`);
    expect((await status(master)).election).toMatchObject({ phase: 'slave', leader: next.serviceId });
    expect(lost).toBe(0);
    expect(duplicated).toBe(0);

    // the election block needs a restart: a reload keeps the running one and says so
    const file = JSON.parse(readFileSync(next.configPath, 'utf8')) as { election: { leaseTtl: number } };
    file.election.leaseTtl = 5;
    const reloadFrom = next.process!.output().length;
    writeFileSync(next.configPath, JSON.stringify(file));
    const reload = await whisker(['reload', '-c', next.configPath]);
    expect(reload.stdout).toContain('applied only after a restart: election.leaseTtl');
    await next.process!.waitFor(/isMaster in the file is not used/, reloadFrom);
    expect((await status(next)).election).toMatchObject({ phase: 'master', leader: next.serviceId });
  }, 120_000);
});
