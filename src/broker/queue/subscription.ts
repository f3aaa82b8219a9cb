import type { Delivery, SubscriptionMode } from '../../protocol/frames.js';
import type { WhiskerError } from '../../protocol/errors.js';
import type { Subscriber } from './group.js';

/** What a subscription needs of its connection. */
export interface SubscriptionOwner {
  readonly clientName: string;
  /** `name#node`, for logs */
  readonly label: string;
  isWritable(): boolean;
  queueDelivery(delivery: Delivery, dataJson?: string): void;
  /** the broker removed ids of subscription `sub` on its own (docs/protocol.md#revoked) */
  revoked?(sub: number, ids: readonly string[], error: WhiskerError): void;
}

/** One listen/consume handler of one connection, on one queue (docs/protocol.md#subscribe). */
export class Subscription implements Subscriber {
  readonly sub: number;
  readonly mode: SubscriptionMode;
  readonly queue: string;
  readonly prefetch: number;
  /**
   * the client's flow limit (docs/protocol.md#flow): at most this many unacked at once, beneath
   * prefetch, listeners too; 0 pauses; Infinity: none. Changed by `flow` frames.
   */
  limit = Infinity;
  readonly ids = new Set<string>();
  readonly owner: SubscriptionOwner;
  /** deliveries handed to this handler, for its rate on the dashboard */
  delivered = 0;

  constructor(owner: SubscriptionOwner, sub: number, mode: SubscriptionMode, queue: string, prefetch: number) {
    this.owner = owner;
    this.sub = sub;
    this.mode = mode;
    this.queue = queue;
    this.prefetch = mode === 'listen' ? Infinity : prefetch;
  }

  get clientName(): string {
    return this.owner.clientName;
  }

  isWritable(): boolean {
    return this.owner.isWritable();
  }

  deliver(delivery: Delivery, dataJson?: string): void {
    delivery.sub = this.sub;
    this.delivered++;
    this.owner.queueDelivery(delivery, dataJson);
  }
}
