import { protocolError, WhiskerError } from '../../protocol/errors.js';
import { type AuthFrame, PROTOCOL_VERSION } from '../../protocol/frames.js';
import type { Session } from '../session.js';

export function handleAuth(session: Session, frame: AuthFrame): void {
  if (frame.protocol !== PROTOCOL_VERSION) {
    session.fail(protocolError(`protocol version ${frame.protocol} not supported, this broker speaks ${PROTOCOL_VERSION}`));
    return;
  }
  const policy = session.ctx.policy;
  session.ctx.keys
    .authenticate(frame, session.nonce, {
      serviceId: policy.config.serviceId,
      socketToken: policy.config.socketServer.token,
      mayRegister: (name) => policy.mayRegister(name),
    })
    .then(
      ({ name, key }) => session.authenticated(name, key),
      (error: unknown) => session.fail(error instanceof WhiskerError ? error : new WhiskerError('E_AUTH', 'Authentication failed')),
    );
}
