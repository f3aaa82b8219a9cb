import { ask, CommandError, locate, resultOf } from './control-client.js';
import type { ControlOptions } from './lifecycle.js';
import { duration, print, printJson, table } from './table.js';
import { safe } from './text.js';

interface Reservation {
  channel: string;
  owner: string;
  since: number;
  releaseAt: number | null;
}

/** `whisker reservations list` and `whisker reservations release CHANNEL` (SPEC §5), answered by the running broker */
export async function runReservations(action: string | undefined, channel: string | undefined, options: ControlOptions): Promise<void> {
  if (action === 'list') {
    const target = locate(options.config, options.socket);
    const result = resultOf(await ask(target, { command: 'reservations-list' })) as { reservations: Reservation[]; limit: number; hold: number; role: string };
    if (options.json) return printJson(result);
    const now = Date.now();
    const rows = result.reservations.map((r) => [
      r.channel,
      r.owner,
      new Date(r.since).toISOString(),
      r.releaseAt === null ? 'subscribed' : `released in ${duration(Math.max(0, Math.round((r.releaseAt - now) / 1000)))}`,
    ]);
    if (rows.length === 0) print('no reserved id\n');
    else print(table(['CHANNEL', 'OWNER', 'SINCE', 'STATE'], rows));
    print(`${result.reservations.length} of at most ${result.limit} (limits.maxReservations); held ${result.hold} s after the owner's last subscription (reservationHold); on this ${safe(result.role)}\n`);
    return;
  }
  if (action === 'release') {
    if (!channel) throw new CommandError('reservations release needs a channel: endpoint/version/id', 2);
    const target = locate(options.config, options.socket);
    const result = resultOf(await ask(target, { command: 'reservations-release', channel })) as Reservation;
    if (options.json) return printJson(result);
    print(`released ${result.channel} (held by ${result.owner}); the next subscriber takes it\n`);
    return;
  }
  throw new CommandError('reservations needs "list" or "release CHANNEL"', 2);
}
