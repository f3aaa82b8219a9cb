/* global fetch, AbortSignal */
// The nemesis's observer of one broker (issue 27), beside it (in its network namespace, so no
// partition hides it): /metrics every `everyMs`, one JSON line a sample on stdout:
// { t, up, role, delivered, heap, epoch, lag } (lag: whisker_peer_lag_messages, what the master sent
// that this broker has not applied yet). A broker that does not answer within 1 s (stopped, killed) is up: 0.
const [url, everyMs] = [process.argv[2], Number(process.argv[3])];
const sum = (text, name) => {
  let total = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    total = (total ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
};
const sample = async () => {
  const asked = Date.now();
  try {
    // a loaded machine can take more than a period to answer: samples may overlap
    const response = await fetch(url, { signal: AbortSignal.timeout(1000) });
    const text = await response.text();
    const t = Date.now(); // the counters are read just before the answer, not when asked
    const line = { t, up: 1, role: sum(text, 'whisker_role'), delivered: sum(text, 'whisker_messages_delivered_total') ?? 0, heap: sum(text, 'nodejs_heap_size_used_bytes'), epoch: sum(text, 'whisker_election_epoch'), lag: sum(text, 'whisker_peer_lag_messages') };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  } catch {
    process.stdout.write(`${JSON.stringify({ t: asked, up: 0 })}\n`);
  }
};
setInterval(() => void sample(), everyMs);
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
