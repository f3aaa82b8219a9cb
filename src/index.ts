/** whisker-mq: the client library, and the broker for those who embed it. */
export { client, WhiskerClient } from './client/client.js';
export type { ClientConfig, SendCallback, SendInfo } from './client/client.js';
export type { ConsumeHandler, DeliveryInfo, Done, Handle, ListenHandler } from './client/subscription.js';
export { WhiskerError, ERROR_CODES } from './protocol/errors.js';
export type { ErrorCode } from './protocol/errors.js';
export { startBroker } from './broker/broker.js';
export type { Broker, BrokerOptions } from './broker/broker.js';
export { loadConfigFile, defaultConfig, buildConfig, ConfigError } from './config/load.js';
export type { Config } from './config/types.js';
