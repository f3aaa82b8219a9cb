/**
 * The one error type that crosses the wire. Codes are a closed set (docs/protocol.md#errors):
 * clients and tests branch on `code`, never on `message`.
 */
export const ERROR_CODES = [
  'E_BAD_CHANNEL',
  'E_FORBIDDEN',
  'E_SCHEMA',
  'E_NO_VALUE',
  'E_TOO_LARGE',
  'E_QUEUE_FULL',
  'E_NO_MASTER',
  'E_TIMEOUT',
  'E_STOPPING',
  'E_STORE',
  'E_AUTH',
  'E_TOKEN',
  'E_SERVICE_ID',
  'E_KEYS',
  'E_DISCONNECTED',
  'E_PROTOCOL',
  'E_LIMIT',
  /** a replay asked of a channel that keeps no history (no `retention`) */
  'E_NO_HISTORY',
  /** cluster: the queue is placed on another mirror set; `details` { set, hosts } (SPEC §13) */
  'E_MOVED',
  /** cluster: a queue not placed yet cannot be placed now (etcd unreachable, no live set) */
  'E_NO_PLACEMENT',
  // client library only (docs/client.md#errors)
  'E_HANDLER',
  'E_ABORTED',
  'E_BAD_ARGUMENT',
  'E_ALREADY_CONNECTED',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const KNOWN_CODES: ReadonlySet<string> = new Set(ERROR_CODES);

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && KNOWN_CODES.has(value);
}

export class WhiskerError extends Error {
  readonly code: ErrorCode;
  readonly details: unknown;

  constructor(code: ErrorCode, message: string, details?: unknown, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WhiskerError';
    this.code = code;
    this.details = details;
  }

  toJSON(): ErrorPayload {
    const payload: ErrorPayload = { code: this.code, message: this.message };
    if (this.details !== undefined) payload.details = this.details;
    return payload;
  }
}

export interface ErrorPayload {
  code: ErrorCode;
  message: string;
  details?: unknown;
}

/** Rebuilds an error received in a frame; an unknown code from a peer is a protocol error. */
export function errorFromPayload(payload: ErrorPayload): WhiskerError {
  const code = isErrorCode(payload.code) ? payload.code : 'E_PROTOCOL';
  return new WhiskerError(code, String(payload.message), payload.details);
}

export function protocolError(reason: string): WhiskerError {
  return new WhiskerError('E_PROTOCOL', `Protocol error: ${reason}`);
}
