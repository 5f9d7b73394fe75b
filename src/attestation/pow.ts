import {
  createHash,
  createHmac,
  createSecretKey,
  hkdfSync,
  pbkdf2,
  randomBytes,
  randomInt,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto';
import { promisify } from 'node:util';
import { LRUCache } from 'lru-cache';
import type { AppRecord, PowAlgorithm } from 'tessera-tokens/internal/apps/app.js';
import { POW_ALGORITHMS } from 'tessera-tokens/internal/apps/app.js';
import type { MaybePromise } from 'tessera-tokens/internal/maybe-promise.js';
import type { ActiveKey } from 'tessera-tokens/internal/signing-keys/keyring.js';
import type { AttestationProblem } from './outcome.js';

/**
 * A proof of work in ALTCHA's v2 format, which the ALTCHA widget and altcha-lib 2 speak: Tessera
 * signs a challenge for an app (`challenge`), the client finds the counter whose derived key starts
 * with the challenge's prefix, and sends back `{challenge, solution}` (`verify`).
 *
 * The challenge is made in ALTCHA's deterministic mode: Tessera picks the counter, derives its key
 * once, and puts the key's first 16 bytes in the challenge as the prefix and an HMAC of the whole key
 * in it as `keySignature`; a solver must try the counters from 0 until it meets that key, and
 * checking a solution is two HMACs whatever the cost. The expiry and the app (`data.app`) are inside
 * what is signed (as ALTCHA v2 has it since CVE-2025-68113). The HMAC keys are derived from the
 * service's signing key (`data.kid`) and the AppID: a challenge verifies for its own app only.
 *
 * Written here rather than with altcha-lib, whose checks make two Web Crypto keys a call: the
 * verification is on the token endpoint's path. The tests hold it to the real altcha-lib.
 */

/** How long a challenge may be solved and sent: past it, `expired`. */
export const CHALLENGE_LIFETIME_MS = 5 * 60_000;
/** The longest `X-Tessera-Attestation` payload of a proof of work (a challenge and its solution are about 700 characters). */
const MAX_PAYLOAD_LENGTH = 4096;
const KEY_LENGTH = 32;
const PREFIX_BYTES = KEY_LENGTH / 2;

export interface PowChallenge {
  parameters: ChallengeParameters;
  signature: string;
}

/**
 * ALTCHA v2's `ChallengeParameters`, as Tessera fills them (sorted keys: the order they are signed in).
 * `data.serial`, once every instance claims proofs by it (`pow-serials.ts`), is what a proof of the
 * challenge is claimed by; a challenge without one is claimed by its signature.
 */
export interface ChallengeParameters {
  algorithm: PowAlgorithm;
  cost: number;
  data: { app: string; kid: number; serial?: number };
  expiresAt: number;
  keyLength: number;
  keyPrefix: string;
  keySignature: string;
  nonce: string;
  salt: string;
}

/** A solution that verified: what is claimed so that it is accepted once, and until when. */
export interface VerifiedPow {
  verdict: 'verified';
  /** The challenge's serial, what it is claimed by; null for a challenge without one. */
  serial: number | null;
  /** The challenge's signature: unique per challenge, what one without a serial is claimed by. */
  replayKey: string;
  /** UNIX ms: the challenge's expiry. */
  validUntil: number;
}

export type PowCheck = VerifiedPow | { verdict: 'invalid'; problem: AttestationProblem };

/** A challenge that is this service's, for the app, unexpired: with the signing key it was made under. */
export type ChallengeCheck = (VerifiedPow & { key: ActiveKey }) | { verdict: 'invalid'; problem: AttestationProblem };

export class ProofOfWork {
  /**
   * HMAC keys by signing key and app: deriving one is an HKDF, and a client of an app comes back. A
   * key's id never names another key, and a retired one is not found by `keyById`: nothing to forget.
   */
  readonly #secrets = new LRUCache<string, Secrets>({ max: 10_000 });

  constructor(
    private readonly signingKey: () => MaybePromise<ActiveKey>,
    private readonly keyById: (id: number) => MaybePromise<ActiveKey | undefined>,
    /** The serial of a challenge made at `now`, or undefined while challenges go without one (`pow-serials.ts`). */
    private readonly serialFor: (now: number) => Promise<number> | undefined = () => undefined,
  ) {}

  /**
   * A challenge for the app, valid for `CHALLENGE_LIFETIME_MS`, that needs from half of `maxAttempts`
   * to all of them (its configuration's `powMaxAttempts`, times what the issuance rate adds).
   */
  async challenge(app: AppRecord, now: number, maxAttempts: number): Promise<PowChallenge> {
    const key = await this.signingKey();
    const serial = await this.serialFor(now);
    const { algorithm, cost } = { algorithm: app.configuration.powAlgorithm, cost: app.configuration.powCost };
    const counter = randomInt(Math.floor(maxAttempts / 2), Math.max(maxAttempts, Math.floor(maxAttempts / 2) + 1));
    const nonce = randomBytes(16);
    const salt = randomBytes(16);
    const derivedKey = await deriveKey(algorithm, cost, salt, password(nonce, counter));
    const secrets = this.#secretsFor(key, app.appId);
    const parameters: ChallengeParameters = {
      algorithm,
      cost,
      data: challengeData(app.appId, key.id, serial),
      expiresAt: Math.floor((now + CHALLENGE_LIFETIME_MS) / 1000),
      keyLength: KEY_LENGTH,
      keyPrefix: derivedKey.subarray(0, PREFIX_BYTES).toString('hex'),
      keySignature: hmac(secrets.keySignature, derivedKey).toString('hex'),
      nonce: nonce.toString('hex'),
      salt: salt.toString('hex'),
    };
    return { parameters, signature: hmac(secrets.signature, JSON.stringify(parameters)).toString('hex') };
  }

  /** Checks an ALTCHA payload (base64 of `{challenge, solution}`) for the app. Never throws for what a client sent. */
  async verify(app: AppRecord, payload: string, now: number): Promise<PowCheck> {
    if (payload.length > MAX_PAYLOAD_LENGTH) return invalid('too_large');
    const submitted = parsePayload(payload);
    if (submitted === undefined) return invalid('malformed');
    const checked = await this.checkChallenge(app, submitted, now);
    if (checked.verdict !== 'verified') return checked;
    // Signed by this service, so every parameter is its own; then the key found must be the one it signed.
    const secrets = this.#secretsFor(checked.key, app.appId);
    const { keySignature } = submitted.parameters;
    if (!digestEqual(keySignature, hmac(secrets.keySignature, Buffer.from(submitted.derivedKey, 'hex')))) return invalid('solution');
    return { verdict: 'verified', serial: checked.serial, replayKey: checked.replayKey, validUntil: checked.validUntil };
  }

  /**
   * Checks that a challenge is one of this service's for the app and has not expired (what App
   * Attest's requests are bound to, `apple.ts`): its expiry, its app, its signature.
   */
  async checkChallenge(app: AppRecord, { parameters, signature }: PowChallenge, now: number): Promise<ChallengeCheck> {
    if (parameters.expiresAt * 1000 <= now) return invalid('expired');
    if (parameters.data.app !== app.appId) return invalid('other_app');
    const found = this.keyById(parameters.data.kid);
    const key = found instanceof Promise ? await found : found;
    if (key === undefined) return invalid('signature');
    if (!digestEqual(signature, hmac(this.#secretsFor(key, app.appId).signature, JSON.stringify(parameters)))) return invalid('signature');
    return {
      verdict: 'verified',
      serial: parameters.data.serial ?? null,
      replayKey: signature,
      validUntil: parameters.expiresAt * 1000,
      key,
    };
  }

  #secretsFor(key: ActiveKey, appId: string): Secrets {
    const id = `${key.id}:${appId}`;
    let secrets = this.#secrets.get(id);
    if (secrets === undefined) {
      const derive = (purpose: string) =>
        createSecretKey(Buffer.from(hkdfSync('sha256', key.key, '', `tessera attestation pow ${purpose} ${appId}`, 32)));
      secrets = { signature: derive('signature'), keySignature: derive('key-signature') };
      this.#secrets.set(id, secrets);
    }
    return secrets;
  }
}

interface Secrets {
  signature: KeyObject;
  keySignature: KeyObject;
}

function invalid(problem: AttestationProblem): { verdict: 'invalid'; problem: AttestationProblem } {
  return { verdict: 'invalid', problem };
}

interface SubmittedPow extends PowChallenge {
  derivedKey: string;
}

const HEX_64 = /^[0-9a-f]{64}$/;
const PARAMETER_COUNT = 9;

/**
 * The payload's parts, shaped as ALTCHA's `Payload` of a challenge Tessera made, or undefined. The
 * parameters are rebuilt in their signed order (sorted keys, as ALTCHA signs them) from exactly the
 * fields Tessera signs: one more or one of another type is not a challenge of Tessera's.
 */
function parsePayload(payload: string): SubmittedPow | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isObject(parsed) || !isObject(parsed.solution)) return undefined;
  const challenge = parseChallenge(parsed.challenge);
  const { counter, derivedKey } = parsed.solution;
  if (challenge === undefined) return undefined;
  if (typeof counter !== 'number' || !Number.isInteger(counter) || counter < 0 || counter > 0xffffffff) return undefined;
  if (typeof derivedKey !== 'string' || !HEX_64.test(derivedKey)) return undefined;
  return { ...challenge, derivedKey };
}

/**
 * A challenge as Tessera makes them (`{parameters, signature}`), its parameters rebuilt in their
 * signed order (sorted keys, as ALTCHA signs them) from exactly the fields Tessera signs: one more
 * or one of another type is not a challenge of Tessera's.
 */
export function parseChallenge(challenge: unknown): PowChallenge | undefined {
  if (!isObject(challenge)) return undefined;
  const { parameters: given, signature } = challenge;
  if (!isObject(given) || typeof signature !== 'string' || !HEX_64.test(signature)) return undefined;
  const { algorithm, cost, data, expiresAt, keyLength, keyPrefix, keySignature, nonce, salt } = given;
  if (Object.keys(given).length !== PARAMETER_COUNT || !isObject(data)) return undefined;
  if (typeof algorithm !== 'string' || !isPowAlgorithm(algorithm) || typeof data.app !== 'string' || typeof data.kid !== 'number')
    return undefined;
  const serial = data.serial;
  if (Object.keys(data).length !== (serial === undefined ? 2 : 3)) return undefined;
  if (serial !== undefined && (typeof serial !== 'number' || !Number.isSafeInteger(serial) || serial < 0)) return undefined;
  if (typeof cost !== 'number' || typeof expiresAt !== 'number' || typeof keyLength !== 'number') return undefined;
  if (typeof keyPrefix !== 'string' || typeof keySignature !== 'string' || typeof nonce !== 'string' || typeof salt !== 'string')
    return undefined;
  const parameters = {
    algorithm,
    cost,
    data: challengeData(data.app, data.kid, serial),
    expiresAt,
    keyLength,
    keyPrefix,
    keySignature,
    nonce,
    salt,
  };
  return { parameters, signature };
}

/** A challenge's `data`, in its signed order: with `serial` only when it has one. */
function challengeData(app: string, kid: number, serial: number | undefined): ChallengeParameters['data'] {
  return serial === undefined ? { app, kid } : { app, kid, serial };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** ALTCHA's password: the nonce, then the counter as a big-endian 32-bit integer (its `uint32` mode). */
function password(nonce: Buffer, counter: number): Buffer {
  const bytes = Buffer.allocUnsafe(nonce.length + 4);
  nonce.copy(bytes);
  bytes.writeUInt32BE(counter, nonce.length);
  return bytes;
}

const DIGESTS: Record<PowAlgorithm, string> = {
  'SHA-256': 'sha256',
  'SHA-384': 'sha384',
  'SHA-512': 'sha512',
  'PBKDF2/SHA-256': 'sha256',
  'PBKDF2/SHA-384': 'sha384',
  'PBKDF2/SHA-512': 'sha512',
};

const pbkdf2Async = promisify(pbkdf2);

/**
 * ALTCHA's key derivations: `cost` rounds of the hash over salt and password (on the event loop: a
 * round is a microsecond, and `powCost` is at most 10,000), or PBKDF2 with `cost` iterations (on
 * libuv's threads).
 */
export async function deriveKey(algorithm: PowAlgorithm, cost: number, salt: Buffer, secret: Buffer): Promise<Buffer> {
  const digest = DIGESTS[algorithm];
  if (algorithm.startsWith('PBKDF2/')) return pbkdf2Async(secret, salt, cost, KEY_LENGTH, digest);
  let key = createHash(digest).update(salt).update(secret).digest();
  for (let round = 1; round < cost; round++) key = createHash(digest).update(key).digest();
  return key.subarray(0, KEY_LENGTH);
}

function hmac(key: KeyObject, data: string | Buffer): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

/** A digest sent in hex against the one made here, in constant time. */
function digestEqual(sentHex: string, made: Buffer): boolean {
  if (sentHex.length !== made.length * 2) return false;
  return timingSafeEqual(Buffer.from(sentHex, 'hex'), made);
}

/** Whether `algorithm` is one the proof of work takes. */
export function isPowAlgorithm(algorithm: string): algorithm is PowAlgorithm {
  return (POW_ALGORITHMS as readonly string[]).includes(algorithm);
}
