// One producer process: connects, sends `count` messages (flat out with a bounded window of
// unanswered sends, or paced at `rate` per second), then reports when every send was answered.
import { client } from '../dist/index.js';
import { host, makeMessage, now, onConfig, pauses, report, withTimeout } from './lib.mjs';

onConfig(async ({ port, clientId, keysDirectory, channel, count, window = 2000, rate = 0 }) => {
  const c = client();
  await withTimeout(c.connect({ hosts: [host(port)], clientId, keysDirectory }), 15_000, `${clientId} connect`);
  await report({ type: 'ready' });

  const errors = {};
  let next = 0;
  let outstanding = 0;
  let answered = 0;
  let firstErrorMessage = null;
  const cpu0 = process.cpuUsage();
  const stopPauses = pauses();
  let resolveDone;
  const finished = new Promise((resolve) => (resolveDone = resolve));

  const onAnswer = (err) => {
    outstanding--;
    answered++;
    if (err) {
      errors[err.code ?? 'unknown'] = (errors[err.code ?? 'unknown'] ?? 0) + 1;
      firstErrorMessage ??= `${err.code}: ${err.message}`;
    }
    if (answered === count) resolveDone();
    else if (!rate) pump();
  };
  const sendOne = () => {
    const seq = next++;
    outstanding++;
    c.send(channel, makeMessage(seq, now()), onAnswer);
  };
  const pump = () => {
    while (outstanding < window && next < count) sendOne();
  };

  const start = now();
  if (rate) {
    // paced: every millisecond or so, send what the schedule says is due (a burst of 1-2)
    const tick = () => {
      const due = Math.min(count, Math.floor(((now() - start) * rate) / 1000) + 1);
      while (next < due) sendOne();
      if (next < count) setTimeout(tick, 1);
    };
    tick();
  } else {
    pump();
  }
  await finished;
  const end = now();
  const cpu = process.cpuUsage(cpu0);
  await report({
    type: 'done',
    start,
    end,
    sent: next,
    answered,
    errors,
    firstErrorMessage,
    cpuMs: (cpu.user + cpu.system) / 1000,
    pauses: stopPauses(),
    rssMB: Math.round(process.memoryUsage().rss / 1e6),
  });
  await c.disconnect();
  process.exit(0);
});
