import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadOrCreateKeys } from '../../src/link/keys.js';
import type { WhiskerError } from '../../src/protocol/errors.js';
import { clientConfig, unconnected } from './harness.js';

/** Clients of the key tests on mirrors (test/broker/mirror/keys-*.test.ts). */

/** a client of `name` with its own key pair (a fresh folder: a rebuilt client) */
export function freshKeys(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `whisker-keys-${name}-`));
  loadOrCreateKeys(dir, 'client');
  return dir;
}

/** connect() to `hosts`: `error` null when connected, else the refusal */
export async function tryConnect(name: string, hosts: string[], keysDirectory?: string): Promise<{ error: WhiskerError | null; client: ReturnType<typeof unconnected> }> {
  const client = unconnected();
  client.on('error', () => undefined);
  const config = clientConfig(name, hosts, { connectTimeout: 3000, ...(keysDirectory ? { keysDirectory } : {}) });
  const error = await client.connect(config).then(
    () => null,
    (e: WhiskerError) => e,
  );
  return { error, client };
}

/** the machine-readable reason of an E_AUTH (docs/protocol.md#auth-reasons) */
export function reasonOf(error: WhiskerError | null | undefined): unknown {
  return (error?.details as { reason?: unknown } | undefined)?.reason;
}
