import { ConfigError, gatherProblems } from '../../config/load.js';
import type { Problem } from '../../config/problems.js';
import type { Config, Retention } from '../../config/types.js';
import { parseChannel, WILDCARD } from '../../protocol/channel.js';
import { type ChannelFormat, compileChannelFormat } from './formats/index.js';
import type { QueueSettings } from '../queue/queue.js';
import { compileRules, type Rules } from './rules.js';

/**
 * Everything a config means for message handling, compiled once per load: rules, channel
 * formats and queue settings. A reload builds a new Policy and swaps it whole, or keeps the old.
 */
export interface Policy {
  readonly config: Config;
  readonly rules: Rules;
  format(queue: string): ChannelFormat | null;
  queueSettings(queue: string): QueueSettings;
  /** the channel's history kept for replays, or null (docs/configuration.md#retention) */
  retention(queue: string): Retention | null;
  mayRegister(name: string): boolean;
}

/**
 * The problems compilePolicy would throw, for loadConfigFile to tell them with the schema's
 * (every problem of a file at once). Given a file the schema refused it may throw anything else.
 */
export function policyProblems(config: unknown): readonly Problem[] {
  try {
    compilePolicy(config as Config);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

export function compilePolicy(config: Config): Policy {
  // every bad rule, format and dead-letter channel of the file at once, not one per run
  const problems: Problem[] = [];
  let compiled: Rules | undefined;
  gatherProblems(problems, () => (compiled = compileRules(config.rules, config.defaultPolicy)));
  const formats = new Map<string, ChannelFormat | null>();
  for (const [queue, settings] of Object.entries(config.channels)) {
    gatherProblems(problems, () => formats.set(queue, compileChannelFormat(queue, settings)));
    if (settings.deadLetter !== undefined) {
      try {
        if (parseChannel(settings.deadLetter).id === WILDCARD) throw new Error('cannot be *');
      } catch (error) {
        problems.push({ key: `channels.${queue}.deadLetter`, message: `not a channel: ${(error as Error).message}` });
      }
    }
  }
  if (problems.length > 0 || !compiled) throw ConfigError.of(problems);
  const rules = compiled;
  const settingsCache = new Map<string, QueueSettings>();
  return {
    config,
    rules,
    format: (queue) => formats.get(queue) ?? null,
    queueSettings(queue) {
      let settings = settingsCache.get(queue);
      if (!settings) {
        const channel = config.channels[queue] ?? {};
        settings = Object.freeze({
          prefetch: channel.prefetch ?? 1,
          ttlMs: channel.ttl === undefined ? null : channel.ttl * 1000,
          maxItems: channel.maxItemsInQueue ?? config.maxItemsInQueue,
          overflow: channel.overflow ?? config.overflow,
          requeueLimit: channel.requeueLimit ?? config.requeueLimit,
          requeueIntervalMs: (channel.requeueInterval ?? config.requeueInterval) * 1000,
          maxTouchMs: (channel.maxTouchSeconds ?? config.maxTouchSeconds) * 1000,
          deadLetter: channel.deadLetter ?? null,
        });
        settingsCache.set(queue, settings);
      }
      return settings;
    },
    retention: (queue) => config.channels[queue]?.retention ?? null,
    mayRegister: (name) => config.autoRegister && rules.matchesAnyRule(name),
  };
}
