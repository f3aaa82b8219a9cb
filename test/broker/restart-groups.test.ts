import { describe, expect, test } from 'vitest';
import { type BrokerProcess, freePort, startProcess, writeConfig } from '../support/broker-process.js';
import { connect, Inbox, tempDir } from '../support/harness.js';

/**
 * What the nemesis (seed 27) lost in the runs that had issue 30's rows3 reverted (2026-12-06,
 * 390 and 211 + 1,324 sends): the master killed -9, restarted and elected again; every send of
 * those seconds reached one recipient group only, the listener's or the consumers'. A group
 * with nothing waiting went with the process, and the copies the producers re-sent to the
 * restarted broker before that group's client subscribed again went to the other group alone.
 * The broker now keeps its groups in `<dataDirectory>/groups.json` and a restart holds them
 * again for `groupHold`, as a lost connection's groups are held (messages/held-groups.ts).
 * Real broker process; before the fix the listener got 0 of the 5.
 */
const CHANNEL = 'jobs/v1/1';

describe('a restart holds the recipient groups it had (groupHold)', () => {
  test('kill -9 with nothing waiting; after the restart the consumers subscribe first, 5 are sent, then the listener: both get the 5', async () => {
    const port = await freePort();
    const dir = tempDir('whisker-restart-groups-');
    const path = writeConfig(dir, { serviceId: 'groups', socketServer: { host: '127.0.0.1', port }, maxItemsInQueue: 100_000 });
    let broker: BrokerProcess = await startProcess(path);
    const host = `127.0.0.1:${port}@groups`;
    const before = { listened: new Inbox(), consumed: new Inbox() };
    const listener = await connect('groups-listener', host);
    await listener.listen(CHANNEL, before.listened.listener).ready;
    const worker = await connect('groups-worker', host);
    await worker.consume(CHANNEL, before.consumed.consumer).ready;
    const producer = await connect('groups-producer', host);
    for (let i = 0; i < 5; i++) await producer.send(CHANNEL, { i });
    // both groups handled and acked everything: nothing waits for either at the kill
    await before.listened.waitFor(5);
    await before.consumed.waitFor(5);
    await new Promise((r) => setTimeout(r, 200));
    broker.child.kill('SIGKILL');
    await broker.exited;
    // the clients go while the broker is down (nothing reaches it): their groups are not let go
    await Promise.all([listener.disconnect(), worker.disconnect(), producer.disconnect()]);

    broker = await startProcess(path);
    const after = { listened: new Inbox(), consumed: new Inbox() };
    const worker2 = await connect('groups-worker', host);
    await worker2.consume(CHANNEL, after.consumed.consumer).ready;
    const producer2 = await connect('groups-producer', host);
    for (let i = 5; i < 10; i++) await producer2.send(CHANNEL, { i });
    await after.consumed.waitFor(5);
    const listener2 = await connect('groups-listener', host);
    await listener2.listen(CHANNEL, after.listened.listener).ready;
    await after.listened.waitFor(5, 3_000).catch(() => undefined);
    await Promise.all([listener2.disconnect(), worker2.disconnect(), producer2.disconnect()]);
    broker.child.kill('SIGKILL');
    await broker.exited;
    const seen = (inbox: Inbox) => inbox.items.map((m) => (m.msg as { i: number }).i).sort((a, b) => a - b);
    expect({ listened: seen(after.listened), consumed: seen(after.consumed) }).toEqual({ listened: [5, 6, 7, 8, 9], consumed: [5, 6, 7, 8, 9] });
  }, 60_000);
});
