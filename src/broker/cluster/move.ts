import { randomBytes } from 'node:crypto';
import { WhiskerError } from '../../protocol/errors.js';
import type { Logger } from '../../runtime/logger.js';
import type { Router } from '../messages/router.js';
import type { HistoryRecord, ReadRecord } from '../history/history.js';
import { exportRecords } from '../history/history-view.js';
import type { ReservationRecord } from '../store/reservation-file.js';
import type { RecoveredRecord, StoredMessage } from '../store/store.js';
import type { Cluster } from './cluster.js';
import { isReturn, type Move, type Placement } from './types.js';

/** a hand-over bigger than this is never written to etcd: the move is called off (docs/security.md); `limits.maxMoveBytes` may lower it */
export const MAX_MOVE_BYTES = 64 * 1024 * 1024;
/** one etcd value of a hand-over (etcd takes requests up to 1.5 MiB by default) */
const CHUNK_BYTES = 512 * 1024;
/** the new set's master deletes a move's keys this long after it took them: its slaves read them too */
const KEEP_CHUNKS_MS = 60_000;
const RETRY_MS = 1_000;
/** the old master waits at most this long for sends accepted before it saw the move to be written */
const APPENDS_WAIT_MS = 5_000;
/** and at least this long: a publish frame read just before the move was seen is checked, stored, queued */
const SETTLE_MS = 200;

type Item = { message: Omit<StoredMessage, 'seq'>; records: RecoveredRecord[] };

/** what a hand-over carries besides the messages held (issue 31): retained history, settled ids, reservations */
interface Extras {
  /** the queue's retained history (within retention), in acceptance order */
  history: HistoryRecord[];
  /** ids settled within the dedupe window, with their acceptance times */
  recent: Array<[messageId: string, acceptedAt: number]>;
  reservations: ReservationRecord[];
  /**
   * the queue's recipient groups (consumer groups, listener names), members or not: a group with
   * nothing unsettled is named by no message, and set b, without it, queued what it took before
   * the name subscribed there for the other groups only (test/attacks-31c move-b-down: a
   * listener lost 7,061 sends when set b was restarted mid-move)
   */
  groups: string[];
}

interface HandOver extends Extras {
  items: Item[];
}

/**
 * Why this file is long: a move and its call-off are one state in etcd, each phase (export,
 * import, return, returned) taken up by whichever master a failover leaves; the hand-over's
 * encoding sits with them.
 *
 * `whisker move ep/ver --to SET` (SPEC §13, docs/operations.md#moving-a-queue). The move is the
 * placement's value in etcd, `{ set: from, move: { to, phase, id } }`, so a failover of either
 * set resumes it from there:
 *
 * - every broker routes the queue's new sends and subscriptions to `to` at once (E_MOVED from
 *   the old set); the queue delivers nothing on either set meanwhile;
 * - `export`: the old set's master (whichever is elected) waits for the sends it accepted before
 *   to be written, then writes what the queue holds (messages in acceptance order, each with its
 *   unsettled records; a delivery in flight is delivered again) to etcd under
 *   `<prefix>/moves/<queue>/<id>/`, and sets the phase `import` with the count of keys;
 * - every broker of the new set stores the sends it gets meanwhile without queueing them; on
 *   `import` it reads the keys, queues those messages in their order, then the ones held aside;
 *   its master then writes `{ set: to }` (one transaction, compared with the value it read);
 * - the old set's brokers then drop what they held of the queue; the new set's master delivers.
 *
 * A hand-over over `limits.maxMoveBytes` calls the move off, the other way round (nothing the
 * new set answered is lost):
 *
 * - `return`: the old set's master writes `{ set: from, move: { to, phase: 'return', id } }`; the
 *   queue routes to `from` again (E_MOVED from `to`), whose brokers hold its new sends aside;
 * - the new set's master waits for the sends it was writing, writes what it held aside to etcd
 *   (same format, messages only) and sets `returned`;
 * - every broker of the old set stores and queues those (less the ids it holds or settled) after
 *   what it holds, then what it held aside; its master writes `{ set: from }`; the new set drops
 *   its copy.
 *
 * Messages dedupe by id: an export or import done twice (a master killed midway) queues nothing twice.
 */
export class Mover {
  readonly #cluster: Cluster;
  readonly #router: Router;
  readonly #log: Logger;
  /** queues this broker saw moving (their end is acted on), with the move last seen */
  readonly #seen = new Map<string, Move>();
  /** exports under way, by move id */
  readonly #exporting = new Set<string>();
  /** moves to this set it has logged, by id */
  readonly #announced = new Set<string>();
  /** imports, by move id: done or under way */
  readonly #imports = new Map<string, Promise<void>>();
  #closed = false;

  constructor(cluster: Cluster, router: Router, log: Logger) {
    this.#cluster = cluster;
    this.#router = router;
    this.#log = log;
    cluster.onPlacementChange((queue, placement) => this.#changed(queue, placement));
    void cluster.placementsRead().then(() => this.#settleRestored());
  }

  /**
   * Once the placements are read at start: a queue this broker kept aside across a restart
   * (messages/aside-file.ts) whose move ended meanwhile. A move still under way to this set (or
   * called off, back to it) took it up already (`#changed`, during the read); for the others,
   * what waited aside follows what the queue holds here, or goes with the queue to its set.
   */
  #settleRestored(): void {
    if (this.#closed) return;
    const me = this.#cluster.set;
    const moving = this.#router.moving;
    for (const queue of moving.unclaimed()) {
      const placement = this.#cluster.placement(queue);
      const move = placement?.move;
      if (move && (move.to === me || (placement.set === me && isReturn(move)))) continue;
      // staying here: a slave still catching up holds its clients' copies for its master's sync
      // (atk31h calloff-a-down A_FAILOVER run7: queued now, they went before the older messages
      // the sync brought next, 1,279 order breaks once that slave was elected)
      const away = placement !== undefined && placement.set !== me;
      if (away) moving.releaseAside(queue);
      else moving.releaseRestored(queue);
      if (away) {
        const dropped = moving.dropMoved(queue);
        this.#log.info('queue moved away while this broker was down: what it held of it here is the other set\'s', { queue, to: placement.set, dropped });
      } else if (!move) {
        moving.freeze(queue, false);
      }
    }
  }

  close(): void {
    this.#closed = true;
  }

  /** the role changed: a new master takes up the moves where etcd says they are */
  roleChanged(): void {
    for (const [queue, placement] of this.#cluster.placementEntries()) if (placement.move) this.#changed(queue, placement);
  }

  /** moves under way that this broker's set takes part in */
  #changed(queue: string, placement: Placement | undefined): void {
    if (this.#closed) return;
    const me = this.#cluster.set;
    const router = this.#router;
    const move = placement?.move;
    if (placement && move) {
      this.#seen.set(queue, move);
      const back = isReturn(move);
      if (placement.set === me) {
        router.moving.freeze(queue, true); // no new first delivery; new sends are E_MOVED (owner() is `to`)
        if (move.phase === 'export' && router.isMaster) void this.#export(queue, placement);
        if (back) {
          // called off: new sends come here again, and wait aside until what the new set took is back
          if (!this.#imports.has(move.id)) router.moving.holdAside(queue);
          if (move.phase === 'returned') void this.#import(queue, placement);
        }
      } else if (move.to === me) {
        router.moving.freeze(queue, true);
        if (!this.#announced.has(move.id)) {
          this.#announced.add(move.id);
          this.#log.info('move: taking the queue over (new sends held aside until the hand-over)', { queue, from: placement.set });
        }
        if (back) {
          // what this set took aside goes back (new sends are E_MOVED again, to the old set)
          if (move.phase === 'return' && router.isMaster) void this.#exportBack(queue, placement);
        } else {
          if (!this.#imports.has(move.id)) router.moving.holdAside(queue);
          if (move.phase === 'import') void this.#import(queue, placement);
        }
      }
      return;
    }
    const last = this.#seen.get(queue);
    if (!last) return;
    this.#seen.delete(queue);
    if (placement && placement.set === me) {
      // moved here (or called off, back here): what waited aside follows what was handed over
      const imports = [...this.#imports.values()];
      void Promise.allSettled(imports).then(() => {
        // a move out again may have begun meanwhile (a slave still taking the hand-over): it keeps the queue frozen
        const now = this.#cluster.placement(queue);
        if (now?.move || now?.set !== me) return;
        router.moving.releaseAside(queue);
        router.moving.freeze(queue, false);
      });
      return;
    }
    router.moving.releaseAside(queue);
    if (placement) {
      // moved away: the new set holds it now; nothing of it is delivered here again
      const dropped = router.moving.dropMoved(queue);
      if (isReturn(last)) this.#log.info('move called off: what this set took of the queue was handed back', { queue, to: placement.set, dropped });
      else this.#log.info('queue moved away: what it held here was handed over', { queue, to: placement.set, dropped });
    } else {
      router.moving.freeze(queue, false);
    }
  }

  async #export(queue: string, placement: Placement): Promise<void> {
    const move = placement.move!;
    if (this.#exporting.has(move.id)) return;
    this.#exporting.add(move.id);
    const cluster = this.#cluster;
    const router = this.#router;
    try {
      const raw = this.#rawOf(queue, placement);
      if (raw === undefined) return;
      this.#log.info('move: handing the queue over (no new first delivery, new sends E_MOVED)', { queue, to: move.to, held: router.queues.get(queue)?.size ?? 0 });
      // sends this broker accepted before it saw the move may still be being written: they go too
      await sleep(SETTLE_MS);
      const deadline = Date.now() + APPENDS_WAIT_MS;
      while (Date.now() < deadline && [...router.appendsUnderWay()].some((id) => router.holding(id) === undefined)) await sleep(10);
      if (!router.isMaster || this.#rawOf(queue, placement) !== raw) return;
      const held = await router.moving.exportQueue(queue);
      const history = router.history ? await exportRecords(router.history, queue) : [];
      const recent = router.recentOf(queue);
      const reservations = router.reservations.ofQueue(queue);
      const groups = [...(router.queues.get(queue)?.groupKeys() ?? [])];
      const chunks = encodeChunks(held, history, recent, reservations, groups);
      const bytes = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
      const max = Math.min(MAX_MOVE_BYTES, router.policy.config.limits.maxMoveBytes);
      if (bytes > max) {
        // the new set answered sends of the queue meanwhile: they come back here before it delivers again
        this.#log.error('move called off: the queue holds more than a move hands over', { queue, to: move.to, bytes, max });
        await cluster.compareAndPut(queue, raw, { set: placement.set, move: { to: move.to, phase: 'return', id: move.id } });
        return;
      }
      // its own keys: another master of this set (a partition) writing at once never mixes with them
      const part = randomBytes(6).toString('hex');
      await cluster.putMoveChunks(queue, move.id, part, chunks);
      if (!router.isMaster) return;
      const next: Placement = { set: placement.set, move: { to: move.to, phase: 'import', id: move.id, chunks: chunks.length, part } };
      const written = await cluster.compareAndPut(queue, raw, next);
      this.#log.info('move: hand-over written to etcd', { queue, to: move.to, messages: held.length, history: history.length, recentIds: recent.length, reservations: reservations.length, groups: groups.length, chunks: chunks.length, bytes, written });
    } catch (error) {
      this.#log.warn('move: hand-over not written, trying again', { queue, to: move.to, error: (error as Error).message });
      this.#later(queue);
    } finally {
      this.#exporting.delete(move.id);
    }
  }

  /** a move called off: the new set's master writes what it took aside meanwhile to etcd, then sets `returned` */
  async #exportBack(queue: string, placement: Placement): Promise<void> {
    const move = placement.move!;
    const key = `${move.id}/return`;
    if (this.#exporting.has(key)) return;
    this.#exporting.add(key);
    const cluster = this.#cluster;
    const router = this.#router;
    try {
      const raw = this.#rawOf(queue, placement);
      if (raw === undefined) return;
      this.#log.info('move called off: handing back the sends taken meanwhile', { queue, to: placement.set });
      // sends this broker accepted before it saw the call-off may still be being written: they go back too
      await sleep(SETTLE_MS);
      const deadline = Date.now() + APPENDS_WAIT_MS;
      while (Date.now() < deadline && [...router.appendsUnderWay()].some((id) => router.holding(id) === undefined && !router.moving.isAside(id))) await sleep(10);
      if (!router.isMaster || this.#rawOf(queue, placement) !== raw) return;
      const aside = await router.moving.exportTaken(queue);
      const chunks = encodeChunks(aside.map((message) => ({ message, records: [] })), [], [], [], []);
      const part = randomBytes(6).toString('hex');
      await cluster.putMoveChunks(queue, move.id, part, chunks);
      if (!router.isMaster) return;
      const next: Placement = { set: placement.set, move: { to: move.to, phase: 'returned', id: move.id, chunks: chunks.length, part } };
      const written = await cluster.compareAndPut(queue, raw, next);
      this.#log.info('move called off: sends taken meanwhile written to etcd', { queue, to: placement.set, messages: aside.length, chunks: chunks.length, written });
    } catch (error) {
      this.#log.warn('move called off: sends taken meanwhile not written, trying again', { queue, error: (error as Error).message });
      this.#later(queue);
    } finally {
      this.#exporting.delete(key);
    }
  }

  #import(queue: string, placement: Placement): Promise<void> {
    const move = placement.move!;
    let run = this.#imports.get(move.id);
    if (!run) {
      run = isReturn(placement.move!) ? this.#takeBack(queue, placement) : this.#take(queue, placement);
      this.#imports.set(move.id, run);
      run.catch((error: unknown) => {
        this.#imports.delete(move.id);
        this.#log.warn('move: hand-over not taken, trying again', { queue, from: placement.set, error: (error as Error).message });
        this.#later(queue);
      });
    }
    return run.then(() => this.#finish(queue, placement)).catch(() => undefined);
  }

  async #take(queue: string, placement: Placement): Promise<void> {
    const move = placement.move!;
    const chunks = await this.#cluster.readMoveChunks(queue, move.id, move.part ?? '', move.chunks ?? 0);
    if (!chunks) throw new Error('hand-over keys missing in etcd');
    const { items, history, recent, reservations, groups } = decodeChunks(queue, chunks);
    const router = this.#router;
    // reserved ids first: another name that took one here meanwhile loses it before anything is delivered
    router.importReservations(reservations);
    // the queue's groups next, held until their members subscribe here: what is queued below goes to them too
    router.holdGroups(queue, groups);
    // the old set's history goes before the messages handed over and before what was sent here meanwhile
    const storedNext = new Set(items.map((i) => i.message.messageId));
    let written = 0;
    let queued = 0;
    try {
      written = (await router.history?.adopt(queue, history, storedNext)) ?? 0;
      router.importRecent(queue, recent);
      queued = await router.moving.importMoved(queue, items);
    } finally {
      // stored and named by the feed: a mirror's catch-up takes their history again
      router.history?.stored(storedNext);
    }
    // what a restart during the move loaded into the queue goes to those groups too, as if from aside
    router.moving.nameHeld(queue, items);
    const aside = router.moving.releaseAside(queue, new Set(recent.map(([messageId]) => messageId)));
    this.#log.info('move: hand-over taken', { queue, from: placement.set, messages: items.length, queued, sentMeanwhile: aside, history: written, recentIds: recent.length, reservations: reservations.length, groups: groups.length });
  }

  /**
   * A move called off, on the old set: the sends the new set took meanwhile (handed back in the
   * order it stored them) are stored and queued after what this set holds, before what was sent
   * here since the call-off. A copy of one held or settled here is not queued again.
   */
  async #takeBack(queue: string, placement: Placement): Promise<void> {
    const move = placement.move!;
    const chunks = await this.#cluster.readMoveChunks(queue, move.id, move.part ?? '', move.chunks ?? 0);
    if (!chunks) throw new Error('handed-back keys missing in etcd');
    const router = this.#router;
    const items = decodeChunks(queue, chunks).items.filter((i) => !router.isSettled(i.message.messageId) && router.holding(i.message.messageId) === undefined);
    // their history goes before the records of what was sent here since the call-off (held until then)
    const history: HistoryRecord[] = items.map(({ message: m }) => ({ messageId: m.messageId, id: m.id, acceptedAt: m.acceptedAt, created: m.created, from: m.from, data: m.data }));
    // stored next, so not written again: those not held aside here already (those are queued from the copy stored here)
    const storedNext = new Set(items.map((i) => i.message.messageId).filter((messageId) => !router.moving.isAside(messageId)));
    let written = 0;
    let queued = 0;
    try {
      written = (await router.history?.adopt(queue, history, storedNext)) ?? 0;
      queued = await router.moving.importMoved(queue, items);
    } finally {
      router.history?.stored(storedNext);
    }
    const aside = router.moving.releaseAside(queue);
    this.#log.info('move called off: sends taken meanwhile are back', { queue, from: move.to, messages: items.length, queued, sentMeanwhile: aside, history: written });
  }

  /** the new set's master ends the move: the placement names this set (the old one's master, a move called off) */
  async #finish(queue: string, placement: Placement): Promise<void> {
    const cluster = this.#cluster;
    if (!this.#router.isMaster) return;
    const raw = this.#rawOf(queue, placement);
    if (raw === undefined) return;
    try {
      if (await cluster.compareAndPut(queue, raw, { set: cluster.set })) {
        if (isReturn(placement.move!)) this.#log.info('move called off: the queue is on this set again', { queue, to: placement.move!.to });
        else this.#log.info('move done: the queue is on this set', { queue, from: placement.set });
        const move = placement.move!;
        setTimeout(() => void cluster.deleteMoveChunks(queue, move.id).catch(() => undefined), KEEP_CHUNKS_MS).unref();
      }
    } catch (error) {
      this.#log.warn('move: placement not written, trying again', { queue, error: (error as Error).message });
      this.#later(queue);
    }
  }

  /** the value etcd held when `placement` was read, while it is still the one cached (a compare-and-put compares with it) */
  #rawOf(queue: string, placement: Placement): string | undefined {
    return this.#cluster.placement(queue) === placement ? this.#cluster.rawPlacement(queue) : undefined;
  }

  #later(queue: string): void {
    setTimeout(() => {
      const placement = this.#cluster.placement(queue);
      if (placement?.move) this.#changed(queue, placement);
    }, RETRY_MS).unref();
  }
}

/** `whisker move`: starts the move, and resolves once the placement names `to` (or the move was called off) */
export async function runMove(cluster: Cluster, queue: string, to: string, progress: (phase: string) => void, timeoutMs: number): Promise<{ from: string; to: string }> {
  const started = await cluster.startMove(queue, to);
  const from = started.set;
  if (!started.move) return { from, to };
  let phase = '';
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const placement = cluster.placement(queue);
    const now = placement?.move ? placement.move.phase : placement ? 'done' : 'gone';
    if (now !== phase) progress((phase = now));
    if (placement && !placement.move && placement.set === to) return { from, to };
    if (!placement || (!placement.move && placement.set !== to)) throw new WhiskerError('E_NO_PLACEMENT', `Move of ${queue} called off: it stays on ${placement?.set ?? 'no set'} (see the old set's master's log)`, { queue });
    if (Date.now() > deadline) throw new WhiskerError('E_TIMEOUT', `Move of ${queue} still under way (${phase}); it goes on: see whisker cluster status`, { queue });
    await sleep(50);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * JSON arrays of about CHUNK_BYTES. A row is a message, `[messageId, id, data, created, acceptedAt,
 * from, [[group, nbRequeues, notBefore]]]`, or one of `{"h": [messageId, id, acceptedAt, created,
 * from, data]}` (a retained history record), `{"r": [messageId, acceptedAt]}` (a settled id),
 * `{"v": [channel, owner, since, releaseAt]}` (a reservation), `{"g": [group]}` (a recipient group of
 * the queue). History rows come first, in order.
 */
function encodeChunks(
  held: ReadonlyArray<{ message: StoredMessage; records: readonly RecoveredRecord[] }>,
  history: readonly ReadRecord[],
  recent: ReadonlyArray<readonly [string, number]>,
  reservations: readonly ReservationRecord[],
  groups: readonly string[],
): string[] {
  const chunks: string[] = [];
  let parts: string[] = [];
  let size = 2;
  const add = (text: string) => {
    if (parts.length > 0 && size + text.length + 1 > CHUNK_BYTES) {
      chunks.push(`[${parts.join(',')}]`);
      parts = [];
      size = 2;
    }
    parts.push(text);
    size += text.length + 1;
  };
  // the data as the history stored it, JSON text spliced in
  for (const r of history) add(`{"h":${JSON.stringify([r.messageId, r.id, r.acceptedAt, r.created, r.from]).slice(0, -1)},${r.dataJson}]}`);
  for (const { message: m, records } of held) add(JSON.stringify([m.messageId, m.id, m.data, m.created, m.acceptedAt, m.from, records.map((r) => [r.group, r.nbRequeues, r.notBefore])]));
  for (const [messageId, acceptedAt] of recent) add(JSON.stringify({ r: [messageId, acceptedAt] }));
  for (const r of reservations) add(JSON.stringify({ v: [r.channel, r.owner, r.since, r.releaseAt] }));
  for (const group of groups) add(JSON.stringify({ g: [group] }));
  if (parts.length > 0) chunks.push(`[${parts.join(',')}]`);
  return chunks;
}

function bad(): never {
  throw new Error('bad hand-over record');
}

function decodeChunks(queue: string, chunks: readonly string[]): HandOver {
  const out: HandOver = { items: [], history: [], recent: [], reservations: [], groups: [] };
  for (const chunk of chunks) {
    for (const row of JSON.parse(chunk) as unknown[]) {
      if (!Array.isArray(row)) {
        const o = (row ?? {}) as { h?: unknown; r?: unknown; v?: unknown; g?: unknown };
        if (Array.isArray(o.h) && o.h.length === 6) {
          const [messageId, id, acceptedAt, created, from, data] = o.h as [unknown, unknown, unknown, unknown, unknown, unknown];
          if (typeof messageId !== 'string' || typeof id !== 'string' || typeof acceptedAt !== 'number' || typeof created !== 'number' || typeof from !== 'string') bad();
          out.history.push({ messageId, id, acceptedAt, created, from, data });
        } else if (Array.isArray(o.r) && o.r.length === 2) {
          const [messageId, acceptedAt] = o.r as [unknown, unknown];
          if (typeof messageId !== 'string' || typeof acceptedAt !== 'number') bad();
          out.recent.push([messageId, acceptedAt]);
        } else if (Array.isArray(o.v) && o.v.length === 4) {
          const [channel, owner, since, releaseAt] = o.v as [unknown, unknown, unknown, unknown];
          if (typeof channel !== 'string' || !channel.startsWith(`${queue}/`) || typeof owner !== 'string' || typeof since !== 'number' || (releaseAt !== null && typeof releaseAt !== 'number')) bad();
          out.reservations.push({ channel, owner, since, releaseAt });
        } else if (Array.isArray(o.g) && o.g.length === 1 && typeof o.g[0] === 'string') {
          out.groups.push(o.g[0]);
        } else bad();
        continue;
      }
      if (row.length !== 7) bad();
      const [messageId, id, data, created, acceptedAt, from, records] = row as [unknown, unknown, unknown, unknown, unknown, unknown, unknown];
      if (typeof messageId !== 'string' || typeof id !== 'string' || typeof created !== 'number' || typeof acceptedAt !== 'number' || typeof from !== 'string' || !Array.isArray(records)) bad();
      out.items.push({
        message: { messageId, queue, id, data, created, acceptedAt, from },
        records: records.map((r) => {
          const [group, nbRequeues, notBefore] = r as [unknown, unknown, unknown];
          if (typeof group !== 'string' || typeof nbRequeues !== 'number' || typeof notBefore !== 'number') bad();
          return { group, nbRequeues, notBefore };
        }),
      });
    }
  }
  return out;
}
