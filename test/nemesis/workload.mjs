// The nemesis's clients (issue 27), one process (in its own network namespace when there are
// namespaces), against dist/: two producers, two consumers (one group), a listener on both
// channels, replays of the retained channel. Commands on stdin ("finish"); progress lines on
// stdout; what each recipient got, in order, written to options.out at the end.
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { client } from '../../dist/index.js';

const options = JSON.parse(process.argv[2]);
const emit = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const base = { hosts: options.hosts, keysDirectory: options.keysDirectory, heartbeatTimeout: options.heartbeatTimeout, reconnect: { initialMs: 100, maxMs: 1000 }, connectTimeout: 30000 };
const JOBS = 'jobs/v1/1';
const FEED = 'feed/v1/1';
const CHANNELS = [JOBS, FEED];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** a replay that never ends fails as E_HARNESS_TIMEOUT rather than holding the run */
const within = (ms, promise) => Promise.race([promise, sleep(ms).then(() => Promise.reject(Object.assign(new Error('no end'), { code: `E_HARNESS_TIMEOUT (${ms} ms)` })))]);
const errors = {};
const countError = (where) => (err) => (errors[`${where}:${err?.code ?? err?.message}`] = (errors[`${where}:${err?.code ?? err?.message}`] ?? 0) + 1);

async function open(clientId, extra = {}) {
  const c = client();
  c.on('error', countError(clientId));
  await c.connect({ ...base, clientId, ...extra });
  return c;
}

// recipients: per channel, [producer, seq, nbRequeues, ...] in arrival order
const listened = { [JOBS]: [], [FEED]: [] };
const consumed = [[], []];
const firstSeen = new Map();
// the client's default dedupeWindow, said here: the checker's LISTENER_DEDUPE_MS is the same
const listener = await open('nemesis-listener', { dedupeWindow: 120 });
for (const channel of CHANNELS) {
  await listener.listen(channel, (err, msg, info) => {
    if (err) return countError('listen')(err);
    // arrival time, message id and the broker that gave it: to read a duplicate afterwards
    const at = Date.now();
    const key = `${channel} ${msg.p}:${msg.s}`;
    const before = firstSeen.get(key);
    // a copy past the client's dedupe: said at once (stderr), with the first copy's fields
    if (before) process.stderr.write(`${JSON.stringify({ e: 'listener-duplicate', key, first: before, again: { at, nbRequeues: info.nbRequeues, messageId: info.messageId, from: info.from, subscribedId: info.subscribedId } })}\n`);
    else firstSeen.set(key, { at, nbRequeues: info.nbRequeues, messageId: info.messageId, from: info.from, subscribedId: info.subscribedId });
    listened[channel].push([msg.p, msg.s, info.nbRequeues ?? 0, at, info.messageId, info.from]);
  }).ready;
}
const consumers = [];
for (let i = 0; i < 2; i++) {
  const c = await open('nemesis-worker', { dedupeWindow: 0 });
  await c.consume(JOBS, { prefetch: options.prefetch }, (err, msg, done, info) => {
    if (err) return countError('consume')(err);
    consumed[i].push([msg.p, msg.s, info.nbRequeues ?? 0]);
    done();
  }).ready;
  consumers.push(c);
}

// producers: per producer and channel, the seqs in send order and how each send ended
const producers = [];
for (let p = 0; p < 2; p++) producers.push(await open(`nemesis-producer-${p}`, { sendTimeout: options.sendTimeout, maxBufferedMessages: 50000 }));
const sends = producers.map(() => ({ [JOBS]: [], [FEED]: [] }));
const outcome = producers.map(() => ({ [JOBS]: new Map(), [FEED]: new Map() }));
let seq = 0;
let pending = 0;
const send = (p, channel) => {
  const s = seq++;
  sends[p][channel].push(s);
  pending++;
  producers[p].send(channel, { p, s }, (err, _r, info) => {
    pending--;
    outcome[p][channel].set(s, !err ? 'ok' : info?.storedBy?.length ? `stored:${err.code}` : `failed:${err.code}`);
  });
};
// every tick each producer pipelines `feedPerTick` sends to the retained channel (0 ms apart)
// and, every other tick, one to the consumed channel
let tick = 0;
const pacer = setInterval(() => {
  tick++;
  for (let p = 0; p < producers.length; p++) {
    for (let i = 0; i < options.feedPerTick; i++) send(p, FEED);
    if (tick % 2 === p) send(p, JOBS);
  }
}, options.tickMs);

// replays during the run: the last 10 s of history, each checked for order per producer
const replays = [];
const replayer = await open('nemesis-replayer');
let replaying = true;
const replayLoop = (async () => {
  while (replaying) {
    await sleep(options.replayEveryMs);
    if (!replaying) break;
    const got = [];
    try {
      await within(30_000, replayer.replay(FEED, { since: Date.now() - 10_000 }, (err, msg) => {
        if (!err) got.push([msg.p, msg.s]);
      }).done);
      replays.push({ at: Date.now(), complete: true, got });
    } catch (error) {
      replays.push({ at: Date.now(), complete: false, code: error.code, got });
    }
  }
})();

const progress = setInterval(() => emit({ e: 'progress', sent: seq, pending, listened: listened[FEED].length + listened[JOBS].length, consumed: consumed[0].length + consumed[1].length }), 5000);

async function finish() {
  clearInterval(pacer);
  replaying = false;
  await replayLoop;
  const settleBy = Date.now() + options.sendTimeout + 10_000;
  while (pending > 0 && Date.now() < settleBy) await sleep(100);
  // every answered send delivered: wait for it (the checker says what is missing)
  const owed = (channel, got) => {
    const seen = new Set(got.map(([p, s]) => `${p}:${s}`));
    let missing = 0;
    for (let p = 0; p < producers.length; p++) for (const [s, how] of outcome[p][channel]) if (how === 'ok' && !seen.has(`${p}:${s}`)) missing++;
    return missing;
  };
  const deliverBy = Date.now() + options.deliverTimeoutMs;
  while (Date.now() < deliverBy && owed(JOBS, listened[JOBS]) + owed(FEED, listened[FEED]) + owed(JOBS, [...consumed[0], ...consumed[1]]) > 0) await sleep(250);
  await sleep(2000); // redeliveries on their way are counted too
  emit({ e: 'progress', step: 'delivered; final replay' });
  const final = [];
  let finalError = null;
  for (let attempt = 0; attempt < 5; attempt++) {
    final.length = 0;
    try {
      await within(120_000, replayer.replay(FEED, { since: 0 }, (err, msg) => {
        if (!err) final.push([msg.p, msg.s]);
      }).done);
      finalError = null;
      break;
    } catch (error) {
      finalError = error.code ?? String(error);
      await sleep(1000);
    }
  }
  const ser = (m) => [...m];
  writeFileSync(
    options.out,
    JSON.stringify({
      sends, outcome: outcome.map((o) => ({ [JOBS]: ser(o[JOBS]), [FEED]: ser(o[FEED]) })),
      listened, consumed, replays, final, finalError, pending, errors,
    }),
  );
  clearInterval(progress);
  // what was recorded is written: a disconnect that hangs must not hold the run
  await Promise.race([Promise.all([listener, replayer, ...consumers, ...producers].map((c) => c.disconnect().catch(() => undefined))), sleep(5000)]);
  process.stdout.write(`${JSON.stringify({ e: 'done' })}\n`, () => process.exit(0));
}

emit({ e: 'ready' });
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line === 'finish') void finish();
});
