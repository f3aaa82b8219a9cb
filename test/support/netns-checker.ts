import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { root } from './broker-process.js';
import type { NetNode } from './netns.js';

/**
 * The checker of the tests between network namespaces (partition.test.ts, election-partition.test.ts):
 * what the client process (netns-client.mjs) reported, per message, as RabbitMQ's Jepsen runs count:
 * sent, answered OK, lost (answered OK, never delivered: must be 0), duplicated, unexpected.
 */
export interface Figures {
  run: string;
  sent: number;
  ok: number;
  failed: number;
  lost: number;
  duplicated: number;
  unexpected: number;
  queuesEmpty: boolean;
}

export class Checker {
  readonly sent = new Set<string>();
  readonly ok = new Set<string>();
  readonly failed = new Map<string, string>();
  readonly got = new Map<string, number>();
  gotEvents = 0;
  /** Date.now() when each delivery was reported, in order */
  readonly gotAt: number[] = [];
  /** deliver or results frames the client ignored: from a broker of an older epoch */
  stale = 0;
  ready = false;
  settled = 0;
  readonly #listeners = new Set<() => void>();

  onEvent(event: { e: string; seq?: string; code?: string }): void {
    if (event.e === 'sent') this.sent.add(event.seq!);
    else if (event.e === 'ok') this.ok.add(event.seq!);
    else if (event.e === 'fail') this.failed.set(event.seq!, event.code!);
    else if (event.e === 'got') {
      this.got.set(event.seq!, (this.got.get(event.seq!) ?? 0) + 1);
      this.gotEvents++;
      this.gotAt.push(Date.now());
    } else if (event.e === 'stale') this.stale++;
    else if (event.e === 'ready') this.ready = true;
    else if (event.e === 'settled') this.settled++;
    for (const listener of [...this.#listeners]) listener();
  }

  /** resolves when `predicate` holds after some event; rejects after `timeoutMs` */
  when(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (predicate()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#listeners.delete(listener);
        reject(new Error(`timed out waiting for ${what}`));
      }, timeoutMs);
      const listener = () => {
        if (!predicate()) return;
        clearTimeout(timer);
        this.#listeners.delete(listener);
        resolve();
      };
      this.#listeners.add(listener);
    });
  }

  figures(run: string, queuesEmpty: boolean): Figures {
    const mine = (seq: string) => seq.startsWith(`${run}-`);
    const sent = [...this.sent].filter(mine);
    const ok = [...this.ok].filter(mine);
    const got = [...this.got].filter(([seq]) => mine(seq));
    return {
      run,
      sent: sent.length,
      ok: ok.length,
      failed: [...this.failed.keys()].filter(mine).length,
      lost: ok.filter((seq) => !this.got.has(seq)).length,
      duplicated: got.reduce((sum, [, n]) => sum + n - 1, 0),
      unexpected: got.filter(([seq]) => !this.sent.has(seq)).length,
      queuesEmpty,
    };
  }
}

export interface NetnsClient {
  readonly child: ChildProcess;
  /** "go <run>" starts sending with seqs `<run>-n`, "stop" stops (then `settled` counts up once every send is answered) */
  command(line: string): void;
}

/** netns-client.mjs in `node`'s namespace, its events fed to `checker`; resolves once it is connected */
export async function startNetnsClient(node: NetNode, options: Record<string, unknown>, checker: Checker): Promise<NetnsClient> {
  const child = spawn(node.exec[0]!, [...node.exec.slice(1), process.execPath, join(root, 'test/support/netns-client.mjs'), JSON.stringify(options)], { stdio: ['pipe', 'pipe', 'inherit'] });
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) checker.onEvent(JSON.parse(line) as { e: string });
  });
  const client = { child, command: (line: string) => void child.stdin!.write(`${line}\n`) };
  await checker.when(() => checker.ready, 20_000, 'the client process connected').catch((error: Error) => {
    child.kill('SIGKILL');
    throw error;
  });
  return client;
}
