/** A port the config names that cannot be bound: the message names the key (runtime failure, exit 1). */
export function portError(key: string, host: string, port: number, error: NodeJS.ErrnoException): Error {
  const why = error.code === 'EADDRINUSE' ? 'is in use by another process' : error.code === 'EACCES' ? 'needs privileges this process lacks' : `cannot be listened on: ${error.message}`;
  return new Error(`config key "${key}": ${host}:${port} ${why}${error.code ? ` (${error.code})` : ''}`);
}
