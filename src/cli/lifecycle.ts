import { ask, CommandError, follow, locate, resultOf } from './control-client.js';
import { duration, print, printJson } from './table.js';
import { safe } from './text.js';

/** what every command that talks to a running broker is given (docs/operations.md#commands) */
export interface ControlOptions {
  readonly config?: string | undefined;
  readonly socket?: string | undefined;
  readonly json?: boolean | undefined;
}


/** `whisker reload`: exit 0 applied, 2 refused (the running config stays), 1 no broker */
export async function runReload(options: ControlOptions): Promise<void> {
  const target = locate(options.config, options.socket);
  const response = await ask(target, { command: 'reload' });
  if (!response.ok) {
    const key = response.error.key ? ` [key: ${response.error.key}]` : '';
    throw new CommandError(`config refused, the running one stays: ${response.error.message}${key}`, response.error.code === 'E_CONFIG' ? 2 : 1);
  }
  const { restartNeeded, warnings = [] } = response.result as { restartNeeded: string[]; warnings?: string[] };
  for (const warning of warnings) process.stderr.write(`whisker: warning: ${safe(warning)}\n`);
  if (options.json) return printJson(response.result);
  print('config reloaded\n');
  if (restartNeeded.length > 0) print(`changed, applied only after a restart: ${restartNeeded.join(', ')}\n`);
}

/** `whisker soft-stop`: returns once the broker has finished what was in flight and stopped */
export async function runSoftStop(options: ControlOptions): Promise<void> {
  const target = locate(options.config, options.socket);
  const started = Date.now();
  // the broker answers at once, tells what is still in flight, and closes the connection once
  // stopped: wait past its own timeout
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => (timer = setTimeout(() => ((timedOut = true), resolve()), (target.softStopTimeout + 30) * 1000)));
  let last = -1;
  const result = await follow(target, { command: 'soft-stop' }, (event) => {
    const { inFlight: now } = event as { inFlight: number };
    if (now !== last && !options.json) process.stderr.write(`whisker: soft stop: ${now} deliveries still in flight\n`);
    last = now;
  }, { stop: deadline }).finally(() => clearTimeout(timer));
  if (timedOut) throw new CommandError(`the broker did not stop within ${target.softStopTimeout + 30} s`);
  const { inFlight } = result as { inFlight: number };
  if (options.json) return printJson({ stopped: true, inFlightAtStart: inFlight, ms: Date.now() - started });
  print(`broker stopped (soft: ${inFlight} deliveries were in flight, ${Date.now() - started} ms)\n`);
}

/** `whisker stop`: at once; what was in flight is delivered again after the next start */
export async function runStop(options: ControlOptions): Promise<void> {
  const target = locate(options.config, options.socket);
  resultOf(await ask(target, { command: 'stop' }, { untilClosed: true }));
  if (options.json) return printJson({ stopped: true });
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
  /** /health's status and reason (docs/management.md#health) */
  health?: 'ok' | 'degraded' | 'stopping' | 'unhealthy';
  reason?: string;
  storeHealthy?: boolean;
  conflict?: { masters: string[]; delivering: string } | null;
  peers?: Array<{ serviceId: string; spec: string; connected: boolean; role: string; following: boolean; inStep: boolean; lagMessages: number; lagSeconds: number }>;
  election?: ElectionStatus | { mode: string; reason: string } | null;
}

function peerLine(p: NonNullable<Status['peers']>[number]): string {
  const state = !p.connected ? 'link down' : p.following ? (p.inStep ? `following, in step, lag ${p.lagMessages} (${p.lagSeconds.toFixed(1)} s)` : 'following, syncing') : p.role;
  return `  peer          ${safe(p.serviceId)} (${safe(p.spec)}): ${state}`;
}

export async function runStatus(options: ControlOptions): Promise<void> {
  const target = locate(options.config, options.socket);
  const status = resultOf(await ask(target, { command: 'status' })) as Status;
  if (options.json) return printJson(status);
  const lines = [
    `${status.serviceId}: ${status.role}, ${status.health === 'ok' || status.health === undefined ? status.state : status.health}, pid ${status.pid}, up ${duration(status.uptimeSeconds)}`,
    ...(status.reason ? [`  reason        ${status.reason}`] : []),
    `  url           ${status.url}`,
    `  connections   ${status.connections} (${status.clients} authenticated)`,
    `  queues        ${status.queues} (${status.waiting} messages waiting, ${status.inFlight} in flight)`,
    `  config        ${status.configPath ?? '(built-in default)'}`,
    `  data          ${status.dataDirectory}`,
    `  reloads       ${status.reloadFailures} refused${status.lastReloadError ? `, last: ${safe(status.lastReloadError)}` : ''}`,
  ];
  if (status.storeHealthy !== undefined) lines.push(`  store         ${status.storeHealthy ? 'healthy' : 'UNHEALTHY: a write failed, sends are refused (E_STORE)'}`);
  if (status.conflict) lines.push(`  conflict      ${status.conflict.masters.map(safe).join(' and ')} are configured as master; ${safe(status.conflict.delivering)} delivers`);
  for (const peer of status.peers ?? []) lines.push(peerLine(peer));
  const e = status.election;
  if (e && 'mode' in e) lines.push(`  election      ${e.mode}: ${e.reason}`);
  else if (e) {
    const lease = e.leaseRemainingMs === null ? 'none' : `${(e.leaseRemainingMs / 1000).toFixed(1)} s left`;
    const since = e.lastChangeAt === null ? '' : `, last change ${new Date(e.lastChangeAt).toISOString()}`;
    lines.push(`  election      ${e.phase}, leader ${e.leader ?? 'none'}, epoch ${e.epoch ?? 'none'}, lease ${lease}${since}${e.reason ? ` (${e.reason})` : ''}`);
  }
  print(lines.join('\n') + '\n');
}
