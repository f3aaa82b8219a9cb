import { CLIENT_NAME } from '../../src/broker/session/keys.js';
import { ERROR_CODES, type ErrorCode } from '../../src/protocol/errors.js';
import { type ClientFrame, decodeClientFrame } from '../../src/protocol/frames.js';
import type { FuzzCase, FuzzInput } from './fuzz-frames.js';
import { type KeyPair, RawPeer, signToken } from './raw-peer.js';

/**
 * Throws fuzz-frames.ts inputs at a live broker and checks each answer against what
 * docs/protocol.md promises: a refusal with a known code (and a close), a reply, results, or
 * nothing for acks (docs/security.md#bad-input).
 */
const KNOWN: ReadonlySet<string> = new Set(ERROR_CODES);
const PROBE_SUB = 2 ** 53 - 1;
let probeReq = 9_000_000_000_000_000;

/** what a broker that follows docs/protocol.md answers to each input */
type Expected =
  | { answer: 'refusal'; codes: readonly ErrorCode[] }
  | { answer: 'welcome' }
  | { answer: 'reply'; req: number }
  | { answer: 'results'; messageIds: string[] }
  | { answer: 'nothing' };

function decoded(input: FuzzInput): ClientFrame | null {
  if (input.kind !== 'text') return null;
  try {
    return decodeClientFrame(input.text);
  } catch {
    return null;
  }
}

function expected(phase: FuzzCase['phase'], input: FuzzInput): Expected {
  if (input.kind === 'signedAuth') {
    const welcome = input.protocol === 1 && CLIENT_NAME.test(input.iss) && input.aud !== 'other' && input.nonce === 'own';
    return welcome ? { answer: 'welcome' } : { answer: 'refusal', codes: ['E_PROTOCOL', 'E_AUTH', 'E_SERVICE_ID'] };
  }
  const frame = decoded(input);
  // not JSON, not an object, unknown type, a field of the wrong type, binary: E_PROTOCOL and close
  if (!frame) return { answer: 'refusal', codes: ['E_PROTOCOL'] };
  if (frame.type === 'auth') return { answer: 'refusal', codes: phase === 'pre' ? ['E_PROTOCOL', 'E_AUTH'] : ['E_PROTOCOL'] };
  // only the handshake is accepted before auth
  if (phase === 'pre') return { answer: 'refusal', codes: ['E_PROTOCOL'] };
  switch (frame.type) {
    case 'publish':
      return { answer: 'results', messageIds: frame.messages.map((m) => m.messageId) };
    case 'ack':
    case 'touch':
    case 'flow':
      return { answer: 'nothing' };
    case 'peerState':
    case 'follow':
    case 'historyAck':
    case 'offer':
      // frames between brokers: a client sending one is refused
      return { answer: 'refusal', codes: ['E_PROTOCOL'] };
    default:
      return { answer: 'reply', req: frame.req };
  }
}

function describe(c: FuzzCase): string {
  const { input } = c;
  const shown = input.kind === 'text' ? input.text : input.kind === 'binary' ? `<binary ${Buffer.from(input.bytes).toString('hex')}>` : JSON.stringify(input);
  return `${c.phase}-auth ${shown.length > 300 ? `${shown.slice(0, 300)}... (${shown.length} chars)` : shown}`;
}

export interface LaneTally {
  sent: number;
  refusals: Map<string, number>;
  welcomes: number;
  replies: number;
  replyErrors: Map<string, number>;
  results: number;
  resultErrors: Map<string, number>;
  acks: number;
  sockets: number;
}

export function newTally(): LaneTally {
  return { sent: 0, refusals: new Map(), welcomes: 0, replies: 0, replyErrors: new Map(), results: 0, resultErrors: new Map(), acks: 0, sockets: 0 };
}

const count = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);

/**
 * One authenticated raw socket (reopened whenever the broker closes it) plus a fresh socket for
 * each pre-auth input. `run` throws, naming the input, when the broker's answer is wrong.
 */
export class FuzzLane {
  readonly #port: number;
  readonly #name: string;
  readonly #keys: KeyPair;
  readonly #tally: LaneTally;
  #peer: RawPeer | null = null;

  constructor(port: number, name: string, keys: KeyPair, tally: LaneTally) {
    this.#port = port;
    this.#name = name;
    this.#keys = keys;
    this.#tally = tally;
  }

  async run(c: FuzzCase): Promise<void> {
    this.#tally.sent++;
    try {
      if (c.phase === 'pre') await this.#pre(c.input);
      else await this.#post(c.input);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n  input: ${describe(c)}`);
    }
  }

  async close(): Promise<void> {
    await this.#peer?.terminate();
    this.#peer = null;
  }

  async #open(): Promise<RawPeer> {
    this.#tally.sockets++;
    return RawPeer.open(this.#port);
  }

  async #pre(input: FuzzInput): Promise<void> {
    const peer = await this.#open();
    const want = expected('pre', input);
    await this.#send(peer, input);
    if (want.answer === 'welcome') {
      await peer.next('welcome');
      this.#tally.welcomes++;
      await peer.terminate();
      return;
    }
    if (want.answer !== 'refusal') throw new Error(`no ${want.answer} is possible before auth`);
    await this.#refusal(peer, want);
  }

  async #post(input: FuzzInput): Promise<void> {
    if (!this.#peer || this.#peer.isClosed) {
      this.#peer = await this.#open();
      await this.#peer.login(this.#name, this.#keys);
    }
    const peer = this.#peer;
    const want = expected('post', input);
    const mark = peer.frames.length;
    await this.#send(peer, input);
    if (want.answer === 'refusal') {
      await this.#refusal(peer, want);
      this.#peer = null;
      return;
    }
    // frames are handled in order: once the probe's reply is back, the input's synchronous answer is too
    const probe = probeReq++;
    peer.sendJson({ type: 'unsubscribe', req: probe, sub: PROBE_SUB });
    await peer.next('reply', (reply) => reply.req === probe);
    const since = () => peer.frames.slice(mark);
    if (want.answer === 'reply') {
      const reply = since().find((f) => f.type === 'reply' && f.req === want.req);
      if (!reply || reply.type !== 'reply') throw new Error(`no reply for req ${want.req}`);
      this.#tally.replies++;
      if (reply.error) count(this.#tally.replyErrors, reply.error.code);
    } else if (want.answer === 'results') {
      const covered = () => {
        const seen = new Set(since().flatMap((f) => (f.type === 'results' ? f.results.map((r) => r.messageId) : [])));
        return want.messageIds.every((m) => seen.has(m));
      };
      await peer.next('results', covered);
      for (const frame of since()) {
        if (frame.type !== 'results') continue;
        for (const result of frame.results) {
          if (!want.messageIds.includes(result.messageId)) continue;
          this.#tally.results++;
          if (result.error) count(this.#tally.resultErrors, result.error.code);
        }
      }
    } else {
      this.#tally.acks++;
    }
    const stray = since().find((f) => f.type === 'error');
    if (stray) throw new Error(`unexpected error frame ${JSON.stringify(stray)} for a valid frame`);
  }

  async #refusal(peer: RawPeer, want: Extract<Expected, { answer: 'refusal' }>): Promise<void> {
    const { error } = await peer.refusal();
    if (!KNOWN.has(error.code)) throw new Error(`unknown error code ${error.code}`);
    if (!want.codes.includes(error.code)) throw new Error(`refused with ${error.code}, expected one of ${want.codes.join(', ')}`);
    count(this.#tally.refusals, error.code);
  }

  async #send(peer: RawPeer, input: FuzzInput): Promise<void> {
    switch (input.kind) {
      case 'text':
        peer.sendRaw(input.text);
        return;
      case 'binary':
        peer.sendRaw(Buffer.from(input.bytes));
        return;
      case 'signedAuth': {
        const aud = input.aud === 'own' ? peer.hello.serviceId : input.aud === 'list' ? ['elsewhere', peer.hello.serviceId] : 'elsewhere';
        const nonce = input.nonce === 'own' ? peer.nonce : 'not-this-socket-nonce';
        const token = await signToken(this.#keys, { iss: input.iss, aud, nonce });
        peer.sendJson({ type: 'auth', protocol: input.protocol, token, publicKey: this.#keys.publicKeyPem });
        return;
      }
      default: {
        const never: never = input;
        throw new Error(`unknown input ${String(never)}`);
      }
    }
  }
}
