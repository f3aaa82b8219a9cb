// Fills the NATS stream for the replay row (bench/peers/nats.mjs): `count` ~100-byte messages
// (lib.mjs makeMessage) published without waiting for each PubAck (the filling is not timed,
// and a million acknowledged publishes take minutes on a small machine), a flush every 10,000,
// then waits until the stream holds them all; reports `done` as a producer does.
import { createRequire } from 'node:module';
import { makeMessage, now, onConfig, report, withTimeout } from '../lib.mjs';
import { STREAM, SUBJECT } from './nats.mjs';

const { connect } = createRequire(import.meta.url)('nats');

onConfig(async ({ port, count }) => {
  const nc = await withTimeout(connect({ servers: `127.0.0.1:${port}` }), 15_000, 'nats fill connect');
  const jsm = await nc.jetstreamManager();
  await report({ type: 'ready' });
  const start = now();
  for (let seq = 0; seq < count; seq++) {
    nc.publish(SUBJECT, JSON.stringify(makeMessage(seq, now())));
    if (seq % 10_000 === 9_999) {
      await nc.flush();
      // the stream keeps up: at most 50,000 published and not stored yet
      while (seq + 1 - (await jsm.streams.info(STREAM)).state.messages > 50_000) await new Promise((r) => setTimeout(r, 20));
    }
  }
  await nc.flush();
  let stored = 0;
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    stored = (await jsm.streams.info(STREAM)).state.messages;
    if (stored >= count) break;
  }
  const errors = stored === count ? {} : { notStored: count - stored };
  await report({ type: 'done', start, end: now(), sent: count, answered: stored, errors, firstErrorMessage: stored === count ? null : `the stream holds ${stored} of ${count}` });
  await nc.close();
  process.exit(0);
});
