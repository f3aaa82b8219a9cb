import '../support/uncaught.js'; // first: its afterEach check must run after every other cleanup
import { describe, expect, test } from 'vitest';
import { startProcess, whisker, writeConfig } from '../support/broker-process.js';
import { tempDir } from '../support/harness.js';
import { newKeyPair, RawPeer } from '../support/raw-peer.js';

/**
 * Issue 29 item 3: Kitten-MQ's CLI spellings (its README: `kitten-mq list -q easilys/v1
 * --channel movement`; its help: -p, -r, -s, -prs) work where they mean something here, and
 * a mistyped option is one line with a suggestion, not parseArgs' text and the whole help page.
 */
describe('Kitten-MQ command lines', () => {
  test('list --channel X is list -i X; -p, -r, -s and -prs are accepted with a note; a typo is one line with "did you mean"', async () => {
    const dir = tempDir();
    const path = writeConfig(dir, { socketServer: { port: 0 } });
    const broker = await startProcess(path);
    const peer = await RawPeer.open(Number(new URL(broker.url).port));
    await peer.login('kitten-app', newKeyPair());
    const messages = ['movement', 'movement', 'stock'].map((id, i) => ({ messageId: `k${i}`, channel: `easilys/v1/${id}`, data: { i }, created: 1 }));
    peer.sendJson({ type: 'publish', messages });
    await peer.next('results');

    const byId = await whisker(['list', '-q', 'easilys/v1', '-i', 'movement', '-c', path]);
    expect(byId.code, byId.stderr).toBe(0);
    const kitten = await whisker(['list', '-q', 'easilys/v1', '--channel', 'movement', '-c', path]);
    expect(kitten.stderr).toBe('');
    expect(kitten.code).toBe(0);
    expect(kitten.stdout).toBe(byId.stdout);

    const whole = await whisker(['list', '-q', 'easilys/v1', '-c', path]);
    for (const parts of [['-p'], ['-r', '-s'], ['-prs']]) {
      const result = await whisker(['list', '-q', 'easilys/v1', ...parts, '-c', path]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toBe(whole.stdout);
      expect(result.stderr).toBe(`whisker: note: ${parts.join(' ')} ignored: Kitten-MQ's primary/requeue/secondary parts of a queue are one queue here; list shows all of it\n`);
    }

    const typo = await whisker(['list', '-q', 'easilys/v1', '--chanel', 'movement', '-c', path]);
    expect(typo.code).toBe(2);
    expect(typo.stdout).toBe('');
    expect(typo.stderr).toBe('whisker: unknown option --chanel; did you mean --channel? (whisker --help lists them)\n');
    const command = await whisker(['lsit', '-c', path]);
    expect(command.code).toBe(2);
    expect(command.stderr).toBe('whisker: unknown command "lsit"; did you mean "list"? (whisker --help lists them)\n');

  }, 30_000);
});

describe('help and typos (outside check atk-kops)', () => {
  test('a misspelt reservations gets its "did you mean"; --help lists -v with the other options', async () => {
    const typo = await whisker(['reservatons', 'list']);
    expect(typo.code).toBe(2);
    expect(typo.stderr.trim()).toBe('whisker: unknown command "reservatons"; did you mean "reservations"? (whisker --help lists them)');
    const help = await whisker(['--help']);
    expect(help.stdout).toMatch(/ {2}-h, --help {9}this text\n {2}-v, --version {6}the version\n/);
  }, 20_000);

  test('an option left without its value (list -q -c FILE) is one line saying so', async () => {
    const result = await whisker(['list', '-q', '-c', 'whisker.config.json']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe("whisker: option -q needs a value (whisker --help)\n");
  }, 20_000);
});
