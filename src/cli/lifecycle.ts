import { ask, CommandError, locate, resultOf } from './control-client.js';
import { duration } from './table.js';

/** what every command that talks to a running broker is given (docs/operations.md#commands) */
export interface ControlOptions {
  readonly config?: string | undefined;
  readonly socket?: string | undefined;
  readonly json?: boolean | undefined;
}

const print = (text: string): void => void process.stdout.write(text);

/** `whisker reload`: exit 0 applied, 2 refused (the running config stays), 1 no broker */
export async function runReload(options: ControlOptions): Promise<void> {
  const target = locate(options.config, options.socket);
  const response = await ask(target, { command: 'reload' });
  if (!response.ok) {
    const key = response.error.key ? ` [key: ${response.error.key}]` : '';
    throw new CommandError(`config refused, the running one stays: ${response.error.message}${key}`, response.error.code === 'E_CONFIG' ? 2 : 1);
  }
  const { restartNeeded } = response.result as { restartNeeded: string[] };
  if (options.json) return print(JSON.stringify(response.result) + '\n');
  print('config reloaded\n');
  if (restartNeeded.length > 0) print(`changed, applied only after a restart: ${restartNeeded.join(', ')}\n`);
}

/** `whisker soft-stop`: returns once the broker has finished what was in flight and stopped */
export async function runSoftStop(options: ControlOptions): Promise<void> {
  const target = locate(options.config, options.socket);
  const started = Date.now();
  // the broker answers at once and closes the connection once stopped: wait past its own timeout
  const response = await ask(target, { command: 'soft-stop' }, { untilClosed: true, timeoutMs: (target.softStopTimeout + 30) * 1000 });
  const { inFlight } = resultOf(response) as { inFlight: number };
  if (options.json) return print(JSON.stringify({ stopped: true, inFlightAtStart: inFlight, ms: Date.now() - started }) + '\n');
  print(`broker stopped (soft: ${inFlight} deliveries were in flight, ${Date.now() - started} ms)\n`);
}

/** `whisker stop`: at once; what was in flight is delivered again after the next start */
export async function runStop(options: ControlOptions): Promise<void> {
  const target = locate(options.config, options.socket);
  resultOf(await ask(target, { command: 'stop' }, { untilClosed: true }));
  if (options.json) return print('{"stopped":true}\n');
  print('broker stopped\n');
}

/** `whisker step-down`: the elected master hands leadership over once its deliveries in flight are acked */
export async function runStepDown(options: ControlOptions): Promise<void> {
  const target = locate(options.config, options.socket);
  const started = Date.now();
  resultOf(await ask(target, { command: 'step-down' }, { timeoutMs: (target.softStopTimeout + 30) * 1000 }));
  if (options.json) return print(JSON.stringify({ steppedDown: true, ms: Date.now() - started }) + '\n');
  print(`stepped down: the lease is given up, another broker is elected (${Date.now() - started} ms)\n`);
}

interface ElectionStatus {
  phase: string;
  epoch: number | null;
  leader: string | null;
  leaseRemainingMs: number | null;
  lastChangeAt: number | null;
  reason: string | null;
}

interface Status {
  serviceId: string;
  role: string;
  state: string;
  pid: number;
  uptimeSeconds: number;
  url: string;
  connections: number;
  clients: number;
  queues: number;
  waiting: number;
  inFlight: number;
  configPath: string | null;
  dataDirectory: string;
  reloadFailures: number;
  lastReloadError: string | null;
  election: ElectionStatus | null;
}

export async function runStatus(options: ControlOptions): Promise<void> {
  const target = locate(options.config, options.socket);
  const status = resultOf(await ask(target, { command: 'status' })) as Status;
  if (options.json) return print(JSON.stringify(status) + '\n');
  const lines = [
    `${status.serviceId}: ${status.role}, ${status.state}, pid ${status.pid}, up ${duration(status.uptimeSeconds)}`,
    `  url           ${status.url}`,
    `  connections   ${status.connections} (${status.clients} authenticated)`,
    `  queues        ${status.queues} (${status.waiting} messages waiting, ${status.inFlight} in flight)`,
    `  config        ${status.configPath ?? '(built-in default)'}`,
    `  data          ${status.dataDirectory}`,
    `  reloads       ${status.reloadFailures} refused${status.lastReloadError ? `, last: ${status.lastReloadError}` : ''}`,
  ];
  const e = status.election;
  if (e) {
    const lease = e.leaseRemainingMs === null ? 'none' : `${(e.leaseRemainingMs / 1000).toFixed(1)} s left`;
    const since = e.lastChangeAt === null ? '' : `, last change ${new Date(e.lastChangeAt).toISOString()}`;
    lines.push(`  election      ${e.phase}, leader ${e.leader ?? 'none'}, epoch ${e.epoch ?? 'none'}, lease ${lease}${since}${e.reason ? ` (${e.reason})` : ''}`);
  }
  print(lines.join('\n') + '\n');
}
