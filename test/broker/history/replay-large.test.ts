import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { encodeRecords, type HistoryRecord, writeSegmentMeta } from '../../../src/broker/history/segment.js';
import { connect, freePort, tempDir } from '../../support/harness.js';
import { startProcess, writeConfig } from '../../support/broker-process.js';
import { newKeyPair, RawPeer } from '../../support/raw-peer.js';

/**
 * A replay of 1,000,000 retained messages (~100 B each) from a real broker process: its RSS stays
 * bounded while it streams them, and another client's sends keep being answered fast. The
 * history files are written by the test (the broker's own encoder), so no minute is spent sending.
 */
const TOTAL = 1_000_000;
const PER_SEGMENT = 50_000;

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

describe('a large replay', () => {
  test(`${TOTAL.toLocaleString('en')} messages: every one replayed once, the broker's RSS stays bounded (grows under 120 MB, the history is ~130 MB as a million records), a bystander's sends stay fast`, async () => {
    const dir = tempDir();
    const historyDir = join(dir, 'data', 'history', 'ev@v1');
    mkdirSync(historyDir, { recursive: true });
    const start = Date.now() - 60_000;
    for (let s = 0; s < TOTAL / PER_SEGMENT; s++) {
      const records: HistoryRecord[] = [];
      for (let i = 0; i < PER_SEGMENT; i++) {
        const n = s * PER_SEGMENT + i;
        records.push({ messageId: `m-${n}`, id: String(n % 100), acceptedAt: start + Math.floor(n / 100), created: start, from: 'producer', data: { n, text: 'about a hundred bytes of json in all, with its envelope' } });
      }
      const path = join(historyDir, `${String(s + 1).padStart(16, '0')}.seg`);
      const bytes = encodeRecords(records);
      writeFileSync(path, bytes);
      // as the broker leaves a segment it closed: its meta beside it
      await writeSegmentMeta({ path, seq: s + 1, count: records.length, bytes: bytes.length, firstAt: records[0]!.acceptedAt, lastAt: records.at(-1)!.acceptedAt });
    }
    const port = await freePort();
    const config = writeConfig(dir, { socketServer: { host: '127.0.0.1', port }, defaultPolicy: 'allow', channels: { 'ev/v1': { retention: { maxBytes: 1_073_741_824 } }, 'other/v1': {} } });
    const b = await startProcess(config);
    try {
      const pid = b.child.pid!;
      const reader = await RawPeer.open(port);
      await reader.login('reader', newKeyPair());
      const bystander = await connect('bystander', b.hostSpec);
      await bystander.send('other/v1/x', { t: 0 });
      // the baseline once both clients are in (their handshakes are not the replay's cost)
      const before = rssMb(pid);
      const latencies: number[] = [];
      let peak = before;
      let replaying = true;
      const probe = (async () => {
        while (replaying) {
          const t = performance.now();
          await bystander.send('other/v1/x', { t });
          latencies.push(performance.now() - t);
          peak = Math.max(peak, rssMb(pid));
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
      let seen = 0;
      let next = 0;
      let ordered = true;
      // count as they come, without keeping them: the raw peer's frame list would hold a million
      reader.keepFrames = false;
      reader.onFrame = (frame) => {
        if (frame.type !== 'deliver') return;
        for (const d of frame.messages) {
          if ((d.data as { n: number }).n !== next++) ordered = false;
          seen++;
        }
      };
      const began = performance.now();
      const reply = await reader.request({ type: 'replay', sub: 1, endpoint: 'ev', version: 'v1', ids: ['*'] });
      expect(reply.error).toBeUndefined();
      const end = await reader.next('replayEnd', undefined, 120_000);
      const seconds = (performance.now() - began) / 1000;
      replaying = false;
      await probe;
      latencies.sort((x, y) => x - y);
      const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? 0;
      console.log(
        `replay of ${TOTAL}: ${seconds.toFixed(1)} s (${Math.round(TOTAL / seconds)} msg/s), broker RSS ${before.toFixed(0)} -> peak ${peak.toFixed(0)} MB, ` +
          `bystander sends during it: ${latencies.length}, p50 ${latencies[Math.floor(latencies.length / 2)]?.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
      );
      expect(end.count).toBe(TOTAL);
      expect(seen).toBe(TOTAL);
      expect(ordered).toBe(true);
      // bounded, not the 50 MB target: that one is the bench's replay row (a quiet machine,
      // +23 to +28 MB); here, with the rest of the suite beside it, V8 collects later (+41 to +57
      // seen, +83 once at load 15). A replay that kept the records would hold the ~130 MB history
      // as a million objects, several hundred MB
      expect(peak - before).toBeLessThan(120);
      // not starved for the replay's length (17-20 s): p99 was 1,014 ms once with a second
      // test suite running beside (load 15), 1.22 s once at load 20; under a second otherwise
      expect(p99).toBeLessThan(2_500);
      await bystander.disconnect();
    } finally {
      b.child.kill('SIGKILL');
      await b.exited;
    }
  }, 180_000);
});
