import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { WhiskerError } from '../protocol/errors.js';

export interface ClientKeys {
  readonly privateKey: KeyObject;
  /** SPKI PEM, sent on first contact so the broker can register it */
  readonly publicKeyPem: string;
  readonly algorithm: 'EdDSA' | 'ES256' | 'ES512';
}

/** A key pair given as PEM text (a secret, an environment variable); the public key is derived when absent. */
export function keysFromPem(privatePem: string | Buffer, publicPem?: string | Buffer): ClientKeys {
  try {
    const privateKey = createPrivateKey(privatePem);
    const publicKey = createPublicKey(publicPem ?? privateKey);
    const publicKeyPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    if (publicPem !== undefined && publicKeyPem !== createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString()) {
      throw new WhiskerError('E_KEYS', 'publicKey is not the public half of privateKey');
    }
    return { privateKey, publicKeyPem, algorithm: algorithmOf(privateKey) };
  } catch (error) {
    if (error instanceof WhiskerError) throw error;
    throw new WhiskerError('E_KEYS', `Cannot read the key given in the config: ${(error as Error).message}`);
  }
}

/** `<name>.pem` (private, PKCS#8) and `<name>.pub` (public, SPKI); made if both are absent (`onCreate` is told). */
export function loadOrCreateKeys(directory: string, name: string, onCreate: (privatePath: string) => void = () => {}): ClientKeys {
  const privatePath = join(directory, `${name}.pem`);
  const publicPath = join(directory, `${name}.pub`);
  const hasPrivate = existsSync(privatePath);
  const hasPublic = existsSync(publicPath);
  if (!hasPrivate && !hasPublic) {
    const pair = generateKeyPairSync('ed25519');
    mkdirSync(directory, { recursive: true, mode: 0o700 });
    writeFileSync(privatePath, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
    writeFileSync(publicPath, pair.publicKey.export({ type: 'spki', format: 'pem' }), { mode: 0o600, flag: 'wx' });
    onCreate(privatePath);
  } else if (!hasPrivate || !hasPublic) {
    throw new WhiskerError('E_KEYS', `Key pair incomplete: ${hasPrivate ? publicPath : privatePath} is missing`);
  }
  try {
    const privateKey = createPrivateKey(readFileSync(privatePath));
    const publicKeyPem = createPublicKey(readFileSync(publicPath)).export({ type: 'spki', format: 'pem' }).toString();
    return { privateKey, publicKeyPem, algorithm: algorithmOf(privateKey) };
  } catch (error) {
    if (error instanceof WhiskerError) throw error;
    throw new WhiskerError('E_KEYS', `Cannot read the key pair in ${directory}: ${(error as Error).message}`);
  }
}

function algorithmOf(key: KeyObject): ClientKeys['algorithm'] {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  if (key.asymmetricKeyType === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1') return 'ES256';
    if (curve === 'secp521r1') return 'ES512';
  }
  throw new WhiskerError('E_KEYS', 'Keys must be Ed25519, P-256 or P-521');
}

/** a fresh short token for one handshake (docs/protocol.md#handshake) */
export function signHandshake(keys: ClientKeys, clientId: string, serviceId: string, nonce: string): Promise<string> {
  return new SignJWT({ nonce })
    .setProtectedHeader({ alg: keys.algorithm })
    .setIssuer(clientId)
    .setAudience(serviceId)
    .setIssuedAt()
    .setExpirationTime('2m')
    .sign(keys.privateKey);
}
