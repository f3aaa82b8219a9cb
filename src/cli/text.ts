/**
 * What the terminal is shown of client-chosen text (ids, names, bodies, errors): control
 * characters (C0, DEL, C1: escape sequences, carriage returns, newlines; line separators and the bidi marks that reorder a line) written as `\u` and 4 hex digits, so a hostile
 * id can neither move the cursor nor rewrite a line (SPEC §11).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export const safe = (text: string): string => text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** a message body on one line: JSON, then made safe (JSON leaves C1 controls and bidi marks raw) */
export const body = (data: unknown): string => safe(JSON.stringify(data) ?? 'undefined');

/** `2026-01-12T09:14:03.120Z`, or `-` for a missing time */
export const time = (ms: number | null | undefined): string => (typeof ms === 'number' && Number.isFinite(ms) && ms > 0 ? new Date(ms).toISOString() : '-');
