import type { IDefaultPolicyContext, IPolicy } from 'cockatiel';
import type { IOptions } from 'etcd3';

type Policy = IPolicy<IDefaultPolicyContext>;
type Execute = <T>(fn: (context: IDefaultPolicyContext) => PromiseLike<T> | T) => Promise<T>;

/**
 * What the etcd client (etcd3) does when a member fails, in place of its own defaults: a call
 * that fails on a member is tried once on each other member, and a member that failed is passed
 * over for 5 s (as etcd3's breaker did) while another member has not failed. Nothing ever
 * waits or refuses for the client's sake: with every member failing (or only one member) each
 * call is tried, and the election's rounds (and the cluster's) are the retries.
 *
 * etcd3's defaults were a circuit breaker per member (3 failures in a row: no call for 5 s) and 3
 * tries per call. One round against a dead etcd made the 3 failures, so an etcd that came up
 * waited up to 5 s; then the breaker let one test call through and held every other call until
 * it ended: under event-loop pauses those calls passed their deadlines while they waited, failed
 * as 3 more and opened the breaker again, with the member's connection dropped each time. A
 * broker with 600 ms pauses was elected 18-22 s after etcd came up, sometimes not in 45 s
 * (test/broker/mirror/election-pauses.test.ts).
 */
export function faultHandling(hosts: readonly string[], recoverable: (error: Error) => boolean): NonNullable<IOptions['faultHandling']> {
  const failedAt = new Map<string, number>();
  const passedOver = (host: string): boolean => performance.now() - (failedAt.get(host) ?? -Infinity) < SKIP_MS;
  const host = (name: string): Policy =>
    policy(async (fn) => {
      if (passedOver(name) && hosts.some((other) => !passedOver(other))) throw new MemberPassedOver(name);
      try {
        const result = await fn(context);
        // a stream (the lease's keepalive) is only opened here: its first answer, or its error
        // (etcd3 then reports it through this policy), says whether the member works
        if (!isStream(result)) failedAt.delete(name);
        return result;
      } catch (error) {
        if (recoverable(error as Error)) failedAt.set(name, performance.now());
        throw error;
      }
    });
  // etcd3 draws hosts.length members at random for a try (withConnection), not each member once:
  // a try can draw only members passed over, and then ends on MemberPassedOver; another is drawn
  const global = policy(async (fn) => {
    for (let failed = 0, drawn = 0; ; ) {
      try {
        return await fn(context);
      } catch (error) {
        if (error instanceof MemberPassedOver ? ++drawn > MAX_DRAWS : !recoverable(error as Error) || ++failed >= hosts.length) throw error;
      }
    }
  });
  return { host, global };
}

const SKIP_MS = 5_000;
const MAX_DRAWS = 10;

const isStream = (value: unknown): boolean => typeof (value as { write?: unknown } | null)?.write === 'function';

/** thrown before a call: etcd3 then takes the next member (a failure after the call would not) */
class MemberPassedOver extends Error {
  constructor(host: string) {
    super(`etcd member ${host} failed its last call: another is tried first`);
  }
}

const context: IDefaultPolicyContext = { signal: new AbortController().signal };

/** the part of cockatiel's IPolicy that etcd3 calls (execute); its events never fire */
function policy(execute: Execute): Policy {
  const never = () => ({ dispose: () => undefined });
  return { execute, onSuccess: never, onFailure: never } as unknown as Policy;
}
