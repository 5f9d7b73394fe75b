import { createHash, createPublicKey, timingSafeEqual, verify, X509Certificate, type KeyObject } from 'node:crypto';
import { decode } from 'cbor2';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { AttestationProblem } from './outcome.js';
import type { EventDetails } from '../events/event.js';
import type { PlatformSettings, PlatformSettingsKind } from './platform-settings.js';

/**
 * Apple App Attest (the `apple` provider), checked as Apple's "Validating apps that connect to your
 * server" has it. A key the app makes in the Secure Enclave is attested once (`attestation`: a CBOR
 * attestation object whose certificate chain leads to Apple's App Attestation root, for the app's
 * team and bundle id, binding the key to the request's challenge); Tessera keeps its public key and
 * counter, and each later request is an assertion signed by that key, over the challenge, with a
 * counter above the last one.
 */

/**
 * Apple App Attestation Root CA (https://www.apple.com/certificateauthority/Apple_App_Attestation_Root_CA.pem),
 * SHA-256 of its DER 1cb9823ba28ba6ad2d33a006941de2ae4f513ef1d4e831b9f7e0fa7b6242c932, valid to 2045.
 */
export const APPLE_ROOT = new X509Certificate(
  Buffer.from(
    'MIICITCCAaegAwIBAgIQC/O+DvHN0uD7jG5yH2IXmDAKBggqhkjOPQQDAzBSMSYwJAYDVQQDDB1BcHBsZSBBcHAgQXR0ZXN0YXRpb24gUm9vdCBDQTET' +
      'MBEGA1UECgwKQXBwbGUgSW5jLjETMBEGA1UECAwKQ2FsaWZvcm5pYTAeFw0yMDAzMTgxODMyNTNaFw00NTAzMTUwMDAwMDBaMFIxJjAkBgNVBAMMHUFw' +
      'cGxlIEFwcCBBdHRlc3RhdGlvbiBSb290IENBMRMwEQYDVQQKDApBcHBsZSBJbmMuMRMwEQYDVQQIDApDYWxpZm9ybmlhMHYwEAYHKoZIzj0CAQYFK4EE' +
      'ACIDYgAERTHhmLW07ATaFQIEVwTtT4dyctdhNbJhFs/Ii2FdCgAHGbpphY3+d8qjuDngIN3WVhQUBHAoMeQ/cLiP1sOUtgjqK9auYen1mMEvRq9Sk3Jm' +
      '5X8U62H+xTD3FE9TgS41o0IwQDAPBgNVHRMBAf8EBTADAQH/MB0GA1UdDgQWBBSskRBTM72+aEH/pwyp5frq5eWKoTAOBgNVHQ8BAf8EBAMCAQYwCgYI' +
      'KoZIzj0EAwMDaAAwZQIwQgFGnByvsiVbpTKwSga0kP0e8EeDS4+sQmTvb7vn53O5+FRXgeLhpJ06ysC5PrOyAjEAp5U4xDgEgllF7En3VcE3iexZZtKe' +
      'YnpqtijVoyFraWVIyd/dganmrduC1bmTBGwD',
    'base64',
  ),
);
export const APPLE_ROOT_FINGERPRINT = '1cb9823ba28ba6ad2d33a006941de2ae4f513ef1d4e831b9f7e0fa7b6242c932';

/** The extension of the credential certificate that holds the nonce (1.2.840.113635.100.8.2), as DER. */
const NONCE_EXTENSION_OID = Buffer.from('06092a864886f763640802', 'hex');
const AAGUID = {
  production: Buffer.concat([Buffer.from('appattest'), Buffer.alloc(7)]),
  development: Buffer.from('appattestdevelop'),
} as const;

/** An app's App Attest settings: its team and bundle ids, and which environment its builds attest in. */
export interface AppAttestSettings {
  teamId: string;
  bundleId: string;
  environment: 'production' | 'development';
}

export interface AppAttestDescription extends AppAttestSettings {
  updatedAt: string;
}

export function parseAppAttestSettings(body: unknown): AppAttestSettings {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalid('The body must be a JSON object.');
  const { teamId, bundleId, environment = 'production', ...rest } = body as Record<string, unknown>;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw invalid(`Unknown field "${extra}"; the fields are teamId, bundleId, environment.`);
  if (typeof teamId !== 'string' || !/^[A-Z0-9]{10}$/.test(teamId))
    throw invalid('teamId must be the 10-character Apple Developer Team ID.');
  if (typeof bundleId !== 'string' || bundleId.length > 255 || !/^[A-Za-z0-9-]+(\.[A-Za-z0-9_-]+)+$/.test(bundleId)) {
    throw invalid('bundleId must be the app\u2019s bundle identifier, such as com.example.app.');
  }
  if (environment !== 'production' && environment !== 'development') throw invalid('environment must be production or development.');
  return { teamId, bundleId, environment };
}

export type AppAttestCheck<T> =
  { verdict: 'verified'; value: T } | { verdict: 'invalid'; problem: AttestationProblem } | { verdict: 'replayed' };

/** A key attested: its id (the SHA-256 of its public key) and its public key (the uncompressed point). */
export interface AttestedKey {
  keyId: Buffer;
  publicKey: Buffer;
}

/**
 * Checks an attestation object for the app, as Apple's guide lists the steps: the chain to Apple's
 * root at `now`, the nonce, the key's id, the app's id, a counter of 0, the environment, the
 * credential id. `clientDataHash`: what the app passed to `attestKey`.
 */
export function verifyAttestation(
  settings: AppAttestSettings,
  attestationObject: Buffer,
  clientDataHash: Buffer,
  keyId: Buffer,
  now: number,
): AppAttestCheck<AttestedKey> {
  try {
    return checkAttestation(settings, attestationObject, clientDataHash, keyId, now);
  } catch {
    // Whatever a crafted object makes the certificate or key parsers throw is an object that is not one.
    return invalid_('malformed');
  }
}

function checkAttestation(
  settings: AppAttestSettings,
  attestationObject: Buffer,
  clientDataHash: Buffer,
  keyId: Buffer,
  now: number,
): AppAttestCheck<AttestedKey> {
  const object = decodeCbor(attestationObject) as { fmt?: unknown; attStmt?: { x5c?: unknown }; authData?: unknown } | undefined;
  const x5c = object?.attStmt?.x5c;
  const authData = object?.authData;
  if (object?.fmt !== 'apple-appattest' || !Array.isArray(x5c) || x5c.length < 2 || !(authData instanceof Uint8Array)) {
    return invalid_('malformed');
  }
  let leaf: X509Certificate;
  let intermediate: X509Certificate;
  try {
    [leaf, intermediate] = [new X509Certificate(x5c[0] as Uint8Array), new X509Certificate(x5c[1] as Uint8Array)];
  } catch {
    return invalid_('malformed');
  }
  const at = new Date(now);
  const valid = (certificate: X509Certificate) => new Date(certificate.validFrom) <= at && at <= new Date(certificate.validTo);
  if (
    !intermediate.verify(APPLE_ROOT.publicKey) ||
    !leaf.verify(intermediate.publicKey) ||
    !valid(leaf) ||
    !valid(intermediate) ||
    !valid(APPLE_ROOT)
  ) {
    return invalid_('signature');
  }
  const data = Buffer.from(authData);
  const nonce = sha256(Buffer.concat([data, clientDataHash]));
  const certified = nonceOf(leaf.raw);
  if (certified === undefined || !equal(certified, nonce)) return invalid_('signature');
  const publicKey = uncompressedPoint(leaf.publicKey);
  if (!equal(sha256(publicKey), keyId)) return invalid_('signature');
  const parsed = parseAuthenticatorData(data);
  if (parsed === undefined || parsed.credentialId === undefined) return invalid_('malformed');
  if (!equal(parsed.rpIdHash, sha256(Buffer.from(`${settings.teamId}.${settings.bundleId}`)))) return invalid_('other_app');
  if (parsed.counter !== 0 || !equal(parsed.aaguid!, AAGUID[settings.environment]) || !equal(parsed.credentialId, keyId)) {
    return invalid_('integrity');
  }
  return { verdict: 'verified', value: { keyId, publicKey } };
}

/** Checks an assertion (CBOR `{signature, authenticatorData}`) by a key attested before; the counter it carries. */
export function verifyAssertion(
  settings: AppAttestSettings,
  assertion: Buffer,
  clientDataHash: Buffer,
  publicKey: Buffer,
  lastCounter: number,
): AppAttestCheck<number> {
  const object = decodeCbor(assertion) as { signature?: unknown; authenticatorData?: unknown } | undefined;
  if (!(object?.signature instanceof Uint8Array) || !(object.authenticatorData instanceof Uint8Array)) return invalid_('malformed');
  const data = Buffer.from(object.authenticatorData);
  const parsed = parseAuthenticatorData(data);
  if (parsed === undefined) return invalid_('malformed');
  const nonce = sha256(Buffer.concat([data, clientDataHash]));
  if (publicKey.length !== 65) return invalid_('malformed');
  const key = createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: publicKey.subarray(1, 33).toString('base64url'), y: publicKey.subarray(33).toString('base64url') },
    format: 'jwk',
  });
  let signed: boolean;
  try {
    signed = verify('sha256', nonce, key, Buffer.from(object.signature));
  } catch {
    signed = false;
  }
  if (!signed) return invalid_('signature');
  if (!equal(parsed.rpIdHash, sha256(Buffer.from(`${settings.teamId}.${settings.bundleId}`)))) return invalid_('other_app');
  if (parsed.counter <= lastCounter) return { verdict: 'replayed' };
  return { verdict: 'verified', value: parsed.counter };
}

interface AuthenticatorData {
  rpIdHash: Buffer;
  counter: number;
  aaguid?: Buffer;
  credentialId?: Buffer;
}

/** WebAuthn's authenticator data: the RP id hash, flags, the counter, and with attested credential data its AAGUID and credential id. */
function parseAuthenticatorData(data: Buffer): AuthenticatorData | undefined {
  if (data.length < 37) return undefined;
  const parsed: AuthenticatorData = { rpIdHash: data.subarray(0, 32), counter: data.readUInt32BE(33) };
  if ((data[32]! & 0x40) === 0) return parsed;
  if (data.length < 55) return undefined;
  const length = data.readUInt16BE(53);
  if (data.length < 55 + length) return undefined;
  return { ...parsed, aaguid: data.subarray(37, 53), credentialId: data.subarray(55, 55 + length) };
}

/** The nonce in the credential certificate's App Attest extension: `SEQUENCE { [1] { OCTET STRING nonce } }`. */
function nonceOf(certificate: Buffer): Buffer | undefined {
  const at = certificate.indexOf(NONCE_EXTENSION_OID);
  if (at < 0) return undefined;
  const marker = certificate.indexOf(Buffer.from([0xa1, 0x22, 0x04, 0x20]), at + NONCE_EXTENSION_OID.length);
  if (marker < 0 || marker > at + NONCE_EXTENSION_OID.length + 16) return undefined;
  return certificate.subarray(marker + 4, marker + 36);
}

/** The key as X9.62's uncompressed point (what App Attest's key id is the SHA-256 of); empty for a key that is not EC. */
function uncompressedPoint(key: KeyObject): Buffer {
  const { x, y } = key.export({ format: 'jwk' });
  if (x === undefined || y === undefined) return Buffer.alloc(0);
  return Buffer.concat([Buffer.from([0x04]), Buffer.from(x, 'base64url'), Buffer.from(y, 'base64url')]);
}

function decodeCbor(bytes: Buffer): unknown {
  try {
    return decode(bytes);
  } catch {
    return undefined;
  }
}

function sha256(data: Buffer): Buffer {
  return createHash('sha256').update(data).digest();
}

function equal(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function invalid_<T>(problem: AttestationProblem): AppAttestCheck<T> {
  return { verdict: 'invalid', problem };
}

/** An app's App Attest settings (`PlatformSettings`). */
export type AppAttest = PlatformSettings<AppAttestSettings, AppAttestDescription>;

export const APP_ATTEST: PlatformSettingsKind<AppAttestSettings, AppAttestDescription> = {
  provider: 'apple',
  describe: (settings, updatedAt) => ({ ...settings, updatedAt: new Date(updatedAt).toISOString() }),
  changed: (settings): EventDetails =>
    settings === null
      ? { appAttest: null }
      : { appAttest: `${settings.teamId}.${settings.bundleId}`, appAttestEnvironment: settings.environment },
};

function invalid(message: string): TesseraError {
  return new TesseraError('invalid_request', message);
}
