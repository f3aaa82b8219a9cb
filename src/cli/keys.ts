import { ask, CommandError, locate, resultOf } from './control-client.js';
import type { ControlOptions } from './lifecycle.js';
import { print, printJson, table } from './table.js';
import { safe } from './text.js';


/** `whisker keys list` and `whisker keys revoke NAME`, answered by the running broker */
export async function runKeys(action: string | undefined, name: string | undefined, options: ControlOptions): Promise<void> {
  if (action === 'list') {
    const target = locate(options.config, options.socket);
    const result = resultOf(await ask(target, { command: 'keys-list' })) as {
      keys: Array<{ name: string; fingerprint: string | null; connections: number }>;
      revoked: number;
      registeredClientsPath: string;
    };
    if (options.json) return printJson(result);
    if (result.keys.length === 0) print(`no registered key in ${safe(result.registeredClientsPath)}\n`);
    else print(table(['NAME', 'SHA-256 OF THE KEY', 'CONNECTIONS'], result.keys.map((k) => [k.name, k.fingerprint ?? '(unreadable file)', k.connections])));
    print(`${result.revoked} revoked keys in ${safe(result.registeredClientsPath)}/revoked\n`);
    return;
  }
  if (action === 'revoke') {
    if (!name) throw new CommandError('keys revoke needs a client name', 2);
    const target = locate(options.config, options.socket);
    const result = resultOf(await ask(target, { command: 'keys-revoke', name })) as { fingerprint: string; closedConnections: number; confirmedBy: string[]; notConfirmedBy: string[] };
    if (options.json) return printJson(result);
    print(`revoked the key of ${safe(name)} (sha256 ${result.fingerprint}); ${result.closedConnections} connections closed\n`);
    if (result.confirmedBy.length > 0) print(`confirmed by the peers ${result.confirmedBy.map(safe).join(', ')}\n`);
    // a peer that missed it gets it when its link is back (docs/operations.md#keys)
    if (result.notConfirmedBy.length > 0) print(`NOT confirmed by the peers ${result.notConfirmedBy.map(safe).join(', ')}: they get it when their link is back\n`);
    return;
  }
  throw new CommandError('keys needs "list" or "revoke NAME"', 2);
}
