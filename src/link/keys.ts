import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
  if (!existsSync(privatePath) && !existsSync(publicPath) && createPair(directory, privatePath, publicPath)) onCreate(privatePath);
  const missing = awaitSibling(privatePath, publicPath);
  if (missing) throw new WhiskerError('E_KEYS', `Key pair incomplete: ${missing} is missing`);
  try {
    const privateKey = createPrivateKey(readFileSync(privatePath));
    const publicKeyPem = createPublicKey(readFileSync(publicPath)).export({ type: 'spki', format: 'pem' }).toString();
    return { privateKey, publicKeyPem, algorithm: algorithmOf(privateKey) };
  } catch (error) {
    if (error instanceof WhiskerError) throw error;
    throw new WhiskerError('E_KEYS', `Cannot read the key pair in ${directory}: ${(error as Error).message}`);
  }
}

/**
 * Writes a new pair; false when another process of the name made it first. Each file appears
 * whole (a link of a written temp file), the private one first: a sibling that sees only it waits.
 */
function createPair(directory: string, privatePath: string, publicPath: string): boolean {
  const pair = generateKeyPairSync('ed25519');
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const suffix = `.${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
  const [privateTemp, publicTemp] = [privatePath + suffix, publicPath + suffix];
  try {
    writeFileSync(privateTemp, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
    writeFileSync(publicTemp, pair.publicKey.export({ type: 'spki', format: 'pem' }), { mode: 0o600, flag: 'wx' });
    try {
      linkSync(privateTemp, privatePath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    }
    linkSync(publicTemp, publicPath);
    return true;
  } catch (error) {
    throw new WhiskerError('E_KEYS', `Cannot write a key pair in ${directory}: ${(error as Error).message}`);
  } finally {
    rmSync(privateTemp, { force: true });
    rmSync(publicTemp, { force: true });
  }
}

/** the path still missing after waiting up to 2 s for a sibling that is writing the pair (its file < 10 s old) */
function awaitSibling(privatePath: string, publicPath: string): string | undefined {
  const missing = () => (!existsSync(privatePath) ? privatePath : !existsSync(publicPath) ? publicPath : undefined);
  const present = missing() === privatePath ? publicPath : privatePath;
  const fresh = () => existsSync(present) && Date.now() - statSync(present).mtimeMs < 10_000;
  const deadline = Date.now() + 2000;
  while (missing() !== undefined && fresh() && Date.now() < deadline) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  return missing();
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
