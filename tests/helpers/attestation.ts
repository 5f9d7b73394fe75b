import assert from 'node:assert/strict';
import { createHash, createSecretKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { encode } from 'cbor2';
import { CompactEncrypt, CompactSign } from 'jose';
import { solveChallenge, type Challenge } from 'altcha-lib';
import { deriveKey as deriveShaKey } from 'altcha-lib/algorithms/sha';
import { deriveKey as derivePbkdf2Key } from 'altcha-lib/algorithms/pbkdf2';
import { request } from './http.js';

/** A challenge of the app, as `GET …/attestation/challenge` answers it. */
export async function challengeOf(appUrl: string): Promise<Challenge> {
  const response = await request(`${appUrl}/attestation/challenge`);
  assert.equal(response.status, 200, response.text);
  return response.body as Challenge;
}

/** The challenge solved by the real altcha-lib, as the ALTCHA widget submits it: base64 of `{challenge, solution}`. */
export async function solvedPayload(challenge: Challenge): Promise<string> {
  const deriveKey = challenge.parameters.algorithm.startsWith('PBKDF2/') ? derivePbkdf2Key : deriveShaKey;
  const solution = await solveChallenge({ challenge, deriveKey });
  assert.ok(solution !== null, 'altcha-lib solved the challenge');
  return Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');
}

/** `X-Tessera-Attestation` with a proof of work for the app, made by the real altcha-lib. */
export async function powAttestation(appUrl: string): Promise<string> {
  return `pow.${await solvedPayload(await challengeOf(appUrl))}`;
}

/** Keys as the Play Console gives them (a test's own): an AES-256 decryption key and an EC P-256 verification key, base64. */
export interface PlayConsoleKeys {
  decryptionKey: string;
  verificationKey: string;
  /** What signs verdicts in the test: Google's, in production. */
  signingKey: KeyObject;
}

export function playConsoleKeys(): PlayConsoleKeys {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    decryptionKey: randomBytes(32).toString('base64'),
    verificationKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64'),
    signingKey: privateKey,
  };
}

/** A Play Integrity verdict of a recognised app on a device that meets device integrity, asked for at `at`. */
export function genuineVerdict(packageName: string, at: number): Record<string, unknown> {
  return {
    requestDetails: { requestPackageName: packageName, timestampMillis: String(at), nonce: randomBytes(16).toString('base64url') },
    appIntegrity: {
      appRecognitionVerdict: 'PLAY_RECOGNIZED',
      packageName,
      certificateSha256Digest: ['6a6a1474b5cbbb2b1aa57e0bc3'],
      versionCode: '42',
    },
    deviceIntegrity: { deviceRecognitionVerdict: ['MEETS_DEVICE_INTEGRITY'] },
    accountDetails: { appLicensingVerdict: 'LICENSED' },
  };
}

/** An integrity token as Google Play makes one: the verdict signed (ES256), then encrypted (A256KW, A256GCM). */
export async function integrityToken(keys: PlayConsoleKeys, verdict: Record<string, unknown>): Promise<string> {
  const jws = await new CompactSign(new TextEncoder().encode(JSON.stringify(verdict)))
    .setProtectedHeader({ alg: 'ES256' })
    .sign(keys.signingKey);
  return new CompactEncrypt(new TextEncoder().encode(jws))
    .setProtectedHeader({ alg: 'A256KW', enc: 'A256GCM' })
    .encrypt(createSecretKey(Buffer.from(keys.decryptionKey, 'base64')));
}

/** An assertion of `key` over `clientDataHash`, as `generateAssertion` makes one, with `counter`. */
export function assertionOf(privateKey: KeyObject, appId: string, counter: number, clientDataHash: Buffer): Buffer {
  const authenticatorData = Buffer.alloc(37);
  createHash('sha256').update(appId).digest().copy(authenticatorData, 0);
  authenticatorData[32] = 0x01;
  authenticatorData.writeUInt32BE(counter, 33);
  const nonce = createHash('sha256')
    .update(Buffer.concat([authenticatorData, clientDataHash]))
    .digest();
  // Uint8Arrays: cbor2 would write a Buffer as its JSON.
  return Buffer.from(
    encode({ signature: new Uint8Array(sign('sha256', nonce, privateKey)), authenticatorData: new Uint8Array(authenticatorData) }),
  );
}
