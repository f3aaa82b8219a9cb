import type { Cluster } from './cluster.js';
import { describe, type Fault } from './schedule.js';

/**
 * Runs one scheduled fault on the cluster and heals it (issue 27). Returns what happened, for
 * the printed log: which broker "master" meant, and anything that went wrong doing it.
 */
export interface FaultRun {
  readonly fault: Fault;
  readonly startedAt: number;
  endedAt: number;
  /** the broker a 'master' target meant when the fault ran */
  resolved: string;
  note: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runFault(cluster: Cluster, fault: Fault): Promise<FaultRun> {
  const run: FaultRun = { fault, startedAt: Date.now(), endedAt: 0, resolved: fault.target, note: '' };
  const target = async () => {
    if (fault.target !== 'master') return cluster.broker(fault.target);
    const master = await cluster.waitMaster(10_000);
    if (!master) run.note += 'no master seen for 10 s, took a; ';
    return master ?? cluster.broker('a');
  };
  switch (fault.kind) {
    case 'kill9': {
      const broker = await target();
      run.resolved = broker.name;
      await broker.process?.kill('SIGKILL');
      await sleep(fault.ms);
      await cluster.startBroker(broker);
      break;
    }
    case 'sigstop': {
      const broker = await target();
      run.resolved = broker.name;
      broker.process?.child.kill('SIGSTOP');
      await sleep(fault.ms);
      broker.process?.child.kill('SIGCONT');
      break;
    }
    case 'partition': {
      const [x, y] = fault.target.split('|') as [string, string];
      cluster.links.cut(x, y);
      await sleep(fault.ms);
      cluster.links.heal(x, y);
      break;
    }
    case 'etcd-restart':
      await cluster.etcd?.kill('SIGKILL');
      await sleep(fault.ms);
      await cluster.startEtcd();
      break;
    case 'reload': {
      const broker = await target();
      run.resolved = broker.name;
      broker.process?.child.kill('SIGHUP');
      break;
    }
    case 'step-down': {
      // the sampled master first; the elected one may have changed since its last sample
      const first = await target();
      for (const broker of [first, ...cluster.brokers.filter((b) => b !== first)]) {
        const { code, out } = await cluster.whisker(broker, ['step-down']);
        if (code === 0) {
          run.resolved = broker.name;
          break;
        }
        run.note += `step-down on ${broker.name} exited ${code}: ${out.trim().slice(0, 120)}; `;
      }
      break;
    }
    case 'restart-no-etcd': {
      const broker = await target();
      run.resolved = broker.name;
      await broker.process?.kill('SIGKILL');
      cluster.links.cut(broker.name, 'e');
      try {
        await cluster.startBroker(broker);
        await sleep(fault.ms);
      } finally {
        cluster.links.heal(broker.name, 'e');
      }
      break;
    }
  }
  run.endedAt = Date.now();
  cluster.log(`fault done: ${describe(fault)}${fault.target === 'master' ? ` (master was ${run.resolved})` : ''}${run.note ? ` [${run.note.trim()}]` : ''}`);
  return run;
}
