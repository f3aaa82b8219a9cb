import type { QueueSettings } from '../../src/broker/queue/types.js';

/**
 * A plain reference model of one queue (SPEC §7, docs/protocol.md#groups), for the differential
 * test (test/broker/queue/differential.test.ts): every waiting message an object, every record an
 * object, no tiers, no bodies on disk, no indexes; quadratic scans where the queue has lists and
 * heaps. Written from the behaviour, not from src/broker/queue/: it says who gets which message,
 * in which order, with which nbRequeues, and what is dead-lettered or dropped.
 *
 * What it fixes where the spec leaves a choice, as the broker does: a group delivers its ready
 * record of the lowest acceptance number first (first deliveries in acceptance order, a redelivery
 * overtakes nothing it was behind); members are served round-robin in subscription order, skipping
 * one without capacity; an ack or nack is followed by a pump of the answering subscriber's groups;
 * at one instant ack timeouts go first (in delivery order), then delayed requeues, then ttl; the
 * requeues of one unsubscribe or one instant are all made before the groups deliver again.
 */
export interface ModelSubscriber {
  readonly name: string;
  readonly clientName: string;
  readonly mode: 'listen' | 'consume';
  readonly prefetch: number;
  writable: boolean;
}

type State = 'ready' | 'delayed' | 'inflight';

interface ModelRecord {
  readonly message: ModelMessage;
  readonly group: ModelGroup;
  state: State;
  nbRequeues: number;
  notBefore: number;
  deadline: number;
  deliveredAt: number;
  to: ModelSubscriber | null;
  /** deadline order: deliveries and touches in the order they happened */
  order: number;
}

interface ModelMessage {
  readonly seq: number;
  readonly messageId: string;
  readonly id: string;
  readonly acceptedAt: number;
  records: ModelRecord[];
  unassigned: boolean;
  /** its ttl came and went (records in flight then finish) */
  ttlDone: boolean;
}

interface ModelGroup {
  readonly key: string;
  readonly pattern: string;
  members: ModelSubscriber[];
  cursor: number;
  records: number;
}

export interface ModelDelivery {
  readonly to: string;
  readonly messageId: string;
  readonly nbRequeues: number;
}

export interface ModelDiscard {
  readonly target: string | null;
  readonly messageId: string;
  readonly group: string;
  readonly nbDeliveries: number;
  readonly reason: string;
}

const keyOf = (s: ModelSubscriber, pattern: string) => (s.mode === 'consume' ? `c|${pattern}` : `l|${s.clientName}|${pattern}`);

export class QueueModel {
  now: number;
  readonly settings: QueueSettings;
  /** held messages in acceptance order */
  messages: ModelMessage[] = [];
  readonly groups = new Map<string, ModelGroup>();
  readonly deliveries: ModelDelivery[] = [];
  readonly discards: ModelDiscard[] = [];
  #order = 0;
  #deferred: Set<ModelGroup> | null = null;

  constructor(settings: QueueSettings, now: number) {
    this.settings = settings;
    this.now = now;
  }

  // ---- what a user does ----------------------------------------------------------------

  /** false: refused E_QUEUE_FULL */
  send(seq: number, messageId: string, id: string): boolean {
    const s = this.settings;
    if (s.overflow === 'reject' && this.depth >= s.maxItems) return false;
    if (this.depth >= s.maxItems && s.overflow === 'drop-oldest') this.#dropOldest(id);
    const message: ModelMessage = { seq, messageId, id, acceptedAt: this.now, records: [], unassigned: false, ttlDone: false };
    this.messages.push(message);
    const groups = this.#matching(id);
    if (groups.length === 0) message.unassigned = true;
    for (const group of groups) this.#addRecord(message, group);
    for (const group of groups) this.#pump(group);
    return true;
  }

  subscribe(sub: ModelSubscriber, pattern: string): void {
    const key = keyOf(sub, pattern);
    let group = this.groups.get(key);
    const isNew = !group;
    if (!group) this.groups.set(key, (group = { key, pattern, members: [], cursor: 0, records: 0 }));
    if (!group.members.includes(sub)) group.members.push(sub);
    if (isNew) {
      // messages waiting for a subscriber, in acceptance order, go to every group matching them
      const touched = new Set<ModelGroup>();
      for (const message of this.messages) {
        if (!message.unassigned) continue;
        const groups = this.#matching(message.id);
        if (groups.length === 0) continue;
        message.unassigned = false;
        for (const g of groups) {
          this.#addRecord(message, g);
          touched.add(g);
        }
      }
      for (const g of touched) this.#pump(g);
    }
    this.#pump(group);
  }

  unsubscribe(sub: ModelSubscriber, pattern: string): void {
    const group = this.groups.get(keyOf(sub, pattern));
    if (!group) return;
    const index = group.members.indexOf(sub);
    if (index >= 0) {
      group.members.splice(index, 1);
      if (group.cursor > index) group.cursor--;
    }
    this.#batched(() => {
      for (const record of this.#inFlightInOrder()) {
        if (record.to === sub && record.group === group) this.#fail(record, 0, 'unsubscribed');
      }
    });
    this.#dropGroupIfEmpty(group);
    this.#pump(group);
  }

  ack(sub: ModelSubscriber, messageId: string, pattern: string, ok: boolean, delaySeconds: number): void {
    const record = this.#recordOf(sub, messageId, pattern);
    if (!record || record.state !== 'inflight' || record.to !== sub) return;
    if (ok) this.#settle(record);
    else this.#fail(record, delaySeconds * 1000, 'requeued by consumer');
    this.resume(sub);
  }

  touch(sub: ModelSubscriber, messageId: string, pattern: string): void {
    const record = this.#recordOf(sub, messageId, pattern);
    if (!record || record.state !== 'inflight' || record.to !== sub) return;
    const deadline = this.now + this.settings.requeueIntervalMs;
    if (deadline > record.deliveredAt + (this.settings.maxTouchMs ?? 3_600_000) || deadline <= record.deadline) return;
    record.deadline = deadline;
    record.order = this.#order++;
  }

  /** the operator drops one message, in flight or not (`whisker delete`, a dead letter replayed) */
  remove(messageId: string): boolean {
    const message = this.messages.find((m) => m.messageId === messageId);
    if (!message) return false;
    this.#drop(message, true);
    return true;
  }

  /** the operator empties the queue, or one id of it: answers how many messages went */
  purge(id?: string): number {
    const victims = this.messages.filter((m) => id === undefined || m.id === id);
    this.#batched(() => {
      for (const message of victims) this.#drop(message, true);
    });
    return victims.length;
  }

  /**
   * The broker restarts (SPEC §8): every connection is gone; each held message comes back with its
   * records, a delivery that was in flight counted (nbRequeues + 1); a message that waited for a
   * subscriber goes to the groups the other records brought back. ttl runs again from acceptance.
   */
  restart(): void {
    this.groups.clear();
    for (const m of this.messages) {
      m.ttlDone = false;
      m.records = m.records.map((r) => {
        let group = this.groups.get(r.group.key);
        if (!group) this.groups.set(r.group.key, (group = { key: r.group.key, pattern: r.group.pattern, members: [], cursor: 0, records: 0 }));
        group.records++;
        const inFlight = r.state === 'inflight';
        return { ...r, group, state: inFlight ? 'ready' : r.state, nbRequeues: inFlight ? r.nbRequeues + 1 : r.nbRequeues, notBefore: inFlight ? 0 : r.notBefore, to: null };
      });
    }
    for (const m of this.messages) {
      if (!m.unassigned) continue;
      const groups = this.#matching(m.id);
      if (groups.length === 0) continue;
      m.unassigned = false;
      for (const group of groups) this.#addRecord(m, group);
    }
    this.advance(this.now);
  }

  /** the subscriber can take more (a stalled connection drained) */
  resume(sub: ModelSubscriber): void {
    for (const group of [...this.groups.values()]) if (group.members.includes(sub)) this.#pump(group);
  }

  /** the clock moves to `to`, everything due on the way happens at its time */
  advance(to: number): void {
    for (;;) {
      const due = this.#nextDue();
      if (due > to) break;
      // what fell due while the broker was down happens when it is back
      this.now = Math.max(this.now, due);
      this.#batched(() => this.#wake());
    }
    this.now = to;
  }

  // ---- what the test reads ---------------------------------------------------------------

  /** messages not yet delivered to every group (waiting, requeued or delayed) */
  get depth(): number {
    return this.messages.filter((m) => m.unassigned || m.records.some((r) => r.state !== 'inflight')).length;
  }

  get inFlightCount(): number {
    return this.#inFlightInOrder().length;
  }

  inFlight(): Array<{ readonly to: ModelSubscriber; readonly messageId: string; readonly pattern: string }> {
    return this.#inFlightInOrder().map((r) => ({ to: r.to!, messageId: r.message.messageId, pattern: r.group.pattern }));
  }

  /** each held message as the queue lists it: `id?:group=state nbRequeues,...` (`?`: waits for a subscriber) */
  summaries(): string[] {
    return this.messages.map((m) => `${m.messageId}${m.unassigned ? '?' : ''}:${m.records.map((r) => `${r.group.key}=${r.state}${r.nbRequeues}`).sort().join(',')}`);
  }

  /** times at which a delayed requeue is due (the generator avoids two at one instant: their order is not defined) */
  delayedAt(): number[] {
    return this.messages.flatMap((m) => m.records.filter((r) => r.state === 'delayed').map((r) => r.notBefore));
  }

  // ---- how it works ----------------------------------------------------------------------

  #matching(id: string): ModelGroup[] {
    return [...this.groups.values()].filter((g) => g.pattern === '*' || id === '*' || g.pattern === id);
  }

  #addRecord(message: ModelMessage, group: ModelGroup): void {
    message.records.push({ message, group, state: 'ready', nbRequeues: 0, notBefore: 0, deadline: 0, deliveredAt: 0, to: null, order: 0 });
    group.records++;
  }

  #recordOf(sub: ModelSubscriber, messageId: string, pattern: string): ModelRecord | undefined {
    const key = keyOf(sub, pattern);
    return this.messages.find((m) => m.messageId === messageId)?.records.find((r) => r.group.key === key);
  }

  #inFlightInOrder(): ModelRecord[] {
    return this.messages.flatMap((m) => m.records.filter((r) => r.state === 'inflight')).sort((a, b) => a.order - b.order);
  }

  #expired(message: ModelMessage): boolean {
    return this.settings.ttlMs !== null && message.acceptedAt + this.settings.ttlMs <= this.now;
  }

  /** the requeues of one unsubscribe or one instant are all made before any of them is delivered again */
  #batched(work: () => void): void {
    if (this.#deferred) return work();
    const deferred = (this.#deferred = new Set());
    work();
    this.#deferred = null;
    for (const group of deferred) this.#pump(group);
  }

  #pump(group: ModelGroup): void {
    if (this.#deferred) {
      this.#deferred.add(group);
      return;
    }
    if (group.members.length === 0) return;
    for (;;) {
      let next: ModelRecord | undefined;
      for (const m of this.messages) {
        const r = m.records.find((x) => x.group === group && x.state === 'ready');
        if (r && (!next || m.seq < next.message.seq)) next = r;
      }
      if (!next) return;
      if (this.#expired(next.message)) {
        this.#settle(next);
        continue;
      }
      const member = this.#pick(group);
      if (!member) return;
      next.state = 'inflight';
      next.to = member;
      next.deliveredAt = this.now;
      next.deadline = this.now + this.settings.requeueIntervalMs;
      next.order = this.#order++;
      this.deliveries.push({ to: member.name, messageId: next.message.messageId, nbRequeues: next.nbRequeues });
    }
  }

  #pick(group: ModelGroup): ModelSubscriber | undefined {
    const count = group.members.length;
    for (let i = 0; i < count; i++) {
      const index = (group.cursor + i) % count;
      const member = group.members[index]!;
      const held = this.#inFlightInOrder().filter((r) => r.to === member).length;
      if (member.writable && held < member.prefetch) {
        group.cursor = (index + 1) % count;
        return member;
      }
    }
    return undefined;
  }

  #settle(record: ModelRecord): void {
    const { message, group } = record;
    message.records = message.records.filter((r) => r !== record);
    group.records--;
    this.#dropGroupIfEmpty(group);
    this.#forgetIfDone(message);
  }

  #forgetIfDone(message: ModelMessage): void {
    if (message.records.length === 0 && !message.unassigned) this.messages = this.messages.filter((m) => m !== message);
  }

  #dropGroupIfEmpty(group: ModelGroup): void {
    if (group.members.length === 0 && group.records === 0 && this.groups.get(group.key) === group) this.groups.delete(group.key);
  }

  #fail(record: ModelRecord, delayMs: number, reason: string): void {
    record.state = 'ready';
    record.to = null;
    const nbDeliveries = record.nbRequeues + 1;
    if (nbDeliveries >= this.settings.requeueLimit) {
      this.discards.push({ target: this.settings.deadLetter, messageId: record.message.messageId, group: record.group.key, nbDeliveries, reason });
      this.#settle(record);
      this.#pump(record.group);
      return;
    }
    if (this.#expired(record.message)) {
      this.#settle(record);
      this.#pump(record.group);
      return;
    }
    record.nbRequeues = nbDeliveries;
    record.notBefore = delayMs > 0 ? this.now + delayMs : 0;
    if (delayMs > 0) {
      record.state = 'delayed';
    } else {
      this.#pump(record.group);
    }
  }

  /** every record not in flight (or those too) settled; true when it was still waiting */
  #drop(message: ModelMessage, inFlightToo: boolean): boolean {
    let waited = false;
    if (message.unassigned) {
      message.unassigned = false;
      waited = true;
    }
    const freed: ModelGroup[] = [];
    for (const record of [...message.records]) {
      if (record.state === 'inflight' && !inFlightToo) continue;
      if (record.state === 'inflight') freed.push(record.group);
      this.#settle(record);
      waited = true;
    }
    this.#forgetIfDone(message);
    for (const group of freed) this.#pump(group);
    return waited;
  }

  #dropOldest(id: string): void {
    const waiting = this.messages.filter((m) => m.unassigned || m.records.some((r) => r.state !== 'inflight'));
    const victim = waiting.find((m) => m.id === id) ?? waiting[0];
    if (victim) this.#drop(victim, false);
  }

  #nextDue(): number {
    let due = Infinity;
    const ttl = this.settings.ttlMs;
    for (const m of this.messages) {
      if (ttl !== null && !m.ttlDone) due = Math.min(due, m.acceptedAt + ttl);
      for (const r of m.records) {
        if (r.state === 'inflight') due = Math.min(due, r.deadline);
        if (r.state === 'delayed') due = Math.min(due, r.notBefore);
      }
    }
    return due;
  }

  #wake(): void {
    for (;;) {
      const first = this.#inFlightInOrder()[0];
      if (!first || first.deadline > this.now) break;
      this.#fail(first, 0, 'ack timeout');
    }
    for (;;) {
      const delayed = this.messages.flatMap((m) => m.records.filter((r) => r.state === 'delayed' && r.notBefore <= this.now));
      if (delayed.length === 0) break;
      const record = delayed.reduce((a, b) => (b.notBefore < a.notBefore ? b : a));
      record.state = 'ready';
      this.#pump(record.group);
    }
    const ttl = this.settings.ttlMs;
    if (ttl === null) return;
    for (const m of [...this.messages]) {
      if (m.ttlDone || m.acceptedAt + ttl > this.now) continue;
      m.ttlDone = true;
      this.#drop(m, false);
    }
  }
}
