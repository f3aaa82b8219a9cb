import { createHash, timingSafeEqual } from 'node:crypto';

/** compares a secret given by a peer in constant time (both sides hashed to one length first) */
export function sameSecret(given: string | undefined, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(given ?? ''), digest(expected)) && given !== undefined;
}
