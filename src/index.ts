/** whisker-mq: the client library, and the broker for those who embed it. */
export { client, WhiskerClient } from './client/client.js';
export type { Handle } from './client/subscription.js';
export type { MessageStream, ReplayStream } from './client/stream.js';
export type { ReplayHandle, ReplayOptions, ReplaySince } from './client/replay.js';
export type {
  Channel,
  ChannelArg,
  ChannelId,
  ChannelObject,
  ChannelString,
  ClientConfig,
  ClientEventName,
  ClientEvents,
  ConsumeHandler,
  ConsumeOptions,
  DeliveryInfo,
  Done,
  ListenHandler,
  ListenOptions,
  Sendable,
  SendCallback,
  SendInfo,
  SendOptions,
  StreamMessage,
} from './client/types.js';
export { WhiskerError, ERROR_CODES } from './protocol/errors.js';
export type { ErrorCode } from './protocol/errors.js';
export { startBroker } from './embed.js';
export type { Broker, BrokerOptions } from './embed.js';
export { loadConfigFile, defaultConfig, buildConfig, ConfigError } from './config/load.js';
export type { Config } from './config/types.js';
