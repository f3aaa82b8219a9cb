import { protocolError, WhiskerError } from '../../../protocol/errors.js';
import { type AuthFrame, PROTOCOL_VERSION } from '../../../protocol/frames.js';
import type { SessionPort } from '../ports.js';

export function handleAuth(session: SessionPort, frame: AuthFrame): void {
  if (frame.protocol !== PROTOCOL_VERSION) {
    session.fail(protocolError(`protocol version ${frame.protocol} not supported, this broker speaks ${PROTOCOL_VERSION}`));
    return;
  }
  const { policy, peers, cluster } = session.ctx;
  const isPeer = frame.role === 'peer';
  // a peer logs in under its serviceId, and only a serviceId this broker lists in `peers`
  const registry = isPeer ? session.ctx.peerKeys : session.ctx.keys;
  registry
    .authenticate(frame, session.nonce, {
      serviceId: policy.config.serviceId,
      socketToken: policy.config.socketServer.token,
      mayRegister: (name) => (isPeer ? peers.isPeer(name) : policy.mayRegister(name)),
      // mirrors are listed in `peers`: only client names are bounded
      ...(isPeer ? {} : { maxRegistered: policy.config.limits.maxRegisteredClients }),
      // a cluster binds a client name once for all its sets (SPEC §13)
      ...(!isPeer && cluster ? { bind: (name: string, pem: string) => cluster.bindKey(name, pem) } : {}),
    })
    .then(
      ({ name, key }) => {
        if (isPeer && !peers.isPeer(name)) throw new WhiskerError('E_AUTH', `"${name}" is not one of this broker's peers`);
        session.authenticated(name, key, isPeer);
      },
    )
    .catch(
      (error: unknown) => session.fail(error instanceof WhiskerError ? error : new WhiskerError('E_AUTH', 'Authentication failed')),
    );
}
