import { setImmediate } from 'node:timers';

/**
 * Deliveries made in one turn of the event loop, every queue of the process together: past
 * DELIVERIES_PER_TURN a queue's pump stops and goes on in the next turn (core.ts `later`), so
 * one commit that admits a burst (a fan-out of 2,000 sends to 4 listeners: 8,000 deliveries)
 * does not hold the loop for hundreds of milliseconds, while acks, publishes, heartbeats and the
 * election's lease keep-alives wait. Order is kept: a pump always resumes at its group's next row.
 */
export const DELIVERIES_PER_TURN = 1_000;

let spent = 0;
let resetScheduled = false;

// (node:timers' own setImmediate: a test's fake timers replace the global one only, and a reset
// they held back would leave every later pump of the process waiting)
function reset(): void {
  spent = 0;
  resetScheduled = false;
}

/** the budget of this turn is not spent yet: a delivery may be made */
export function deliveriesLeft(): boolean {
  return spent < DELIVERIES_PER_TURN;
}

/** one delivery made */
export function spendDelivery(): void {
  if (!resetScheduled) {
    resetScheduled = true;
    setImmediate(reset);
  }
  spent++;
}
