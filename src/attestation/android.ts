import { createHash, createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
import { compactDecrypt, compactVerify } from 'jose';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { AttestationProblem } from './outcome.js';
import type { EventDetails } from '../events/event.js';
import type { PlatformSettings, PlatformSettingsKind } from './platform-settings.js';

/**
 * Play Integrity's "classic" tokens (the `android` provider): the app asks Google Play for an
 * integrity token, which is a JWE (A256KW, A256GCM) wrapping a JWS (ES256) of the verdict; Tessera
 * decrypts and verifies it locally with the two keys the developer downloads from the Play Console
 * ("Decrypt and verify on your server") and stores here, and accepts it when Google Play recognises
 * the app by its package name on a device that meets device integrity, within five minutes of the
 * request. Each token is accepted once (its SHA-256, claimed as a proof of work is).
 */

/** How old a verdict may be (its `requestDetails.timestampMillis`), and how far ahead of this clock. */
export const VERDICT_LIFETIME_MS = 5 * 60_000;
const CLOCK_SKEW_MS = 60_000;
const PACKAGE_NAME = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/;

/** An app's Play Integrity settings, as stored (the keys in base64, as the Play Console gives them). */
export interface PlayIntegritySettings {
  packageName: string;
  /** The AES-256 key that decrypts the JWE: 32 bytes, base64. */
  decryptionKey: string;
  /** The EC P-256 public key that verifies the JWS: DER SubjectPublicKeyInfo, base64. */
  verificationKey: string;
}

/** What is shown of them: never the decryption key; each key by a fingerprint (its SHA-256's first 8 bytes, hex). */
export interface PlayIntegrityDescription {
  packageName: string;
  decryptionKeyFingerprint: string;
  verificationKeyFingerprint: string;
  updatedAt: string;
}

/** The settings checked and their keys made usable; `invalid_request` saying which field is wrong. */
export function parsePlayIntegritySettings(body: unknown): PlayIntegritySettings {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalid('The body must be a JSON object.');
  const { packageName, decryptionKey, verificationKey, ...rest } = body as Record<string, unknown>;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw invalid(`Unknown field "${extra}"; the fields are packageName, decryptionKey, verificationKey.`);
  if (typeof packageName !== 'string' || packageName.length > 255 || !PACKAGE_NAME.test(packageName)) {
    throw invalid('packageName must be the app\u2019s Android package name, such as com.example.app.');
  }
  if (typeof decryptionKey !== 'string') throw invalid('decryptionKey must be the base64 AES-256 key of the Play Console (32 bytes).');
  if (typeof verificationKey !== 'string') throw invalid('verificationKey must be the base64 EC public key of the Play Console.');
  const settings = { packageName, decryptionKey, verificationKey };
  if (keysOf(settings) === undefined) throw invalid('decryptionKey must be the base64 AES-256 key of the Play Console (32 bytes).');
  return settings;
}

interface PlayIntegrityKeys {
  decryption: KeyObject;
  verification: KeyObject;
}

/** The keys, or undefined when the decryption key is not one (the verification key throws `invalid_request`). */
function keysOf(settings: PlayIntegritySettings): PlayIntegrityKeys | undefined {
  const raw = Buffer.from(settings.decryptionKey, 'base64');
  if (raw.length !== 32 || raw.toString('base64') !== settings.decryptionKey.replace(/\s/g, '')) return undefined;
  let verification: KeyObject;
  try {
    verification = createPublicKey({ key: Buffer.from(settings.verificationKey, 'base64'), format: 'der', type: 'spki' });
  } catch {
    throw invalid('verificationKey must be the base64 EC public key of the Play Console (DER SubjectPublicKeyInfo).');
  }
  if (verification.asymmetricKeyType !== 'ec' || verification.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw invalid('verificationKey must be an EC P-256 public key, as the Play Console gives.');
  }
  return { decryption: createSecretKey(raw), verification };
}

function fingerprint(base64: string): string {
  return createHash('sha256').update(Buffer.from(base64, 'base64')).digest('hex').slice(0, 16);
}

export type PlayIntegrityCheck =
  { verdict: 'verified'; replayKey: string; validUntil: number } | { verdict: 'invalid'; problem: AttestationProblem };

/** Checks a Play Integrity token against the app's settings. Never throws for what a client sent. */
export async function verifyPlayIntegrity(settings: PlayIntegritySettings, token: string, now: number): Promise<PlayIntegrityCheck> {
  const keys = keysOf(settings);
  if (keys === undefined) return { verdict: 'invalid', problem: 'not_configured' };
  let payload: unknown;
  try {
    const { plaintext } = await compactDecrypt(token, keys.decryption, {
      keyManagementAlgorithms: ['A256KW'],
      contentEncryptionAlgorithms: ['A256GCM'],
    });
    try {
      const verified = await compactVerify(new TextDecoder().decode(plaintext), keys.verification, { algorithms: ['ES256'] });
      payload = JSON.parse(new TextDecoder().decode(verified.payload));
    } catch {
      return { verdict: 'invalid', problem: 'signature' };
    }
  } catch {
    return { verdict: 'invalid', problem: 'malformed' };
  }
  const verdict = payload as {
    requestDetails?: { requestPackageName?: unknown; timestampMillis?: unknown };
    appIntegrity?: { appRecognitionVerdict?: unknown; packageName?: unknown };
    deviceIntegrity?: { deviceRecognitionVerdict?: unknown };
  };
  const requested = verdict.requestDetails;
  if (requested?.requestPackageName !== settings.packageName) return { verdict: 'invalid', problem: 'other_app' };
  const at = Number(requested.timestampMillis);
  if (!Number.isFinite(at) || at + VERDICT_LIFETIME_MS <= now || at > now + CLOCK_SKEW_MS)
    return { verdict: 'invalid', problem: 'expired' };
  const device = verdict.deviceIntegrity?.deviceRecognitionVerdict;
  if (
    verdict.appIntegrity?.appRecognitionVerdict !== 'PLAY_RECOGNIZED' ||
    verdict.appIntegrity.packageName !== settings.packageName ||
    !Array.isArray(device) ||
    !device.includes('MEETS_DEVICE_INTEGRITY')
  ) {
    return { verdict: 'invalid', problem: 'integrity' };
  }
  return { verdict: 'verified', replayKey: createHash('sha256').update(token).digest('hex'), validUntil: at + VERDICT_LIFETIME_MS };
}

/** An app's Play Integrity settings (`PlatformSettings`): shown by the keys' fingerprints, never a key. */
export type PlayIntegrity = PlatformSettings<PlayIntegritySettings, PlayIntegrityDescription>;

export const PLAY_INTEGRITY: PlatformSettingsKind<PlayIntegritySettings, PlayIntegrityDescription> = {
  provider: 'android',
  describe,
  changed: (settings): EventDetails =>
    settings === null
      ? { androidPackageName: null }
      : { androidPackageName: settings.packageName, androidVerificationKey: fingerprint(settings.verificationKey) },
};

function describe(settings: PlayIntegritySettings, updatedAt: number): PlayIntegrityDescription {
  return {
    packageName: settings.packageName,
    decryptionKeyFingerprint: fingerprint(settings.decryptionKey),
    verificationKeyFingerprint: fingerprint(settings.verificationKey),
    updatedAt: new Date(updatedAt).toISOString(),
  };
}

function invalid(message: string): TesseraError {
  return new TesseraError('invalid_request', message);
}
