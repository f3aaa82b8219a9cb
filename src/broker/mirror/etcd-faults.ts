import type { IDefaultPolicyContext, IPolicy } from 'cockatiel';
import type { IOptions } from 'etcd3';

type Policy = IPolicy<IDefaultPolicyContext>;
type Execute = <T>(fn: (context: IDefaultPolicyContext) => PromiseLike<T> | T) => Promise<T>;

/**
 * What the etcd client (etcd3) does when a member fails, in place of its own defaults: a call
 * that fails on a member is tried once on each other member, and a member whose last call failed
 * is passed over for `skipMs` while another member has not failed. Nothing ever waits or refuses
 * for the client's sake: the election's rounds (and the cluster's) are the retries, every pollMs.
 *
 * etcd3's defaults were a circuit breaker per member (3 failures in a row: no call for 5 s) and 3
 * tries per call. One round against a dead etcd made the 3 failures, so an etcd that came up
 * waited up to 5 s; then the breaker let one test call through and held every other call until
 * it ended: under event-loop pauses those calls passed their deadlines while they waited, failed
 * as 3 more and opened the breaker again, with the member's connection dropped each time. A
 * broker with 600 ms pauses was elected 18-22 s after etcd came up, sometimes not in 45 s
 * (test/broker/mirror/election-pauses.test.ts).
 */
export function faultHandling(hosts: readonly string[], skipMs: number, recoverable: (error: Error) => boolean): NonNullable<IOptions['faultHandling']> {
  const failedAt = new Map<string, number>();
  const passedOver = (host: string): boolean => performance.now() - (failedAt.get(host) ?? -Infinity) < skipMs;
  const host = (name: string): Policy =>
    policy(async (fn) => {
      if (passedOver(name) && hosts.some((other) => !passedOver(other))) throw new MemberPassedOver(name);
      try {
        const result = await fn(context);
        failedAt.delete(name);
        return result;
      } catch (error) {
        if (recoverable(error as Error)) failedAt.set(name, performance.now());
        throw error;
      }
    });
  const global = policy(async (fn) => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn(context);
      } catch (error) {
        if (attempt >= hosts.length || !recoverable(error as Error)) throw error;
      }
    }
  });
  return { host, global };
}

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
