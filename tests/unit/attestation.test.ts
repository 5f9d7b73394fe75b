import assert from 'node:assert/strict';
import { createSecretKey, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { solveChallenge } from 'altcha-lib';
import { deriveKey as altchaPbkdf2 } from 'altcha-lib/algorithms/pbkdf2';
import { deriveKey as altchaSha } from 'altcha-lib/algorithms/sha';
import { DEFAULT_APP_CONFIGURATION, POW_ALGORITHMS, type AppConfiguration, type AppRecord } from 'tessera-tokens/internal/apps/app.js';
import type { ActiveKey } from 'tessera-tokens/internal/signing-keys/keyring.js';
import { parseAnonymousToken, signAnonymousToken, anonymousTokenSignedBy } from 'tessera-tokens/internal/tokens/anonymous-token.js';
import { parseAttestationHeader } from '../../src/attestation/header.js';
import { IssuanceRate, MAX_POW_RISE } from '../../src/attestation/issuance-rate.js';
import { attestationSummary, refusedShare } from '../../src/attestation/monitor.js';
import { CHALLENGE_LIFETIME_MS, deriveKey, ProofOfWork, type PowChallenge } from '../../src/attestation/pow.js';
import { BLOCK_USE_MS, PowSerials } from '../../src/attestation/pow-serials.js';
import { SERIALS_PER_BLOCK } from '../../src/attestation/store.js';
import type { EventCountsDescription } from '../../src/events/counts.js';

const T0 = Date.parse('2026-11-29T12:00:00Z');
const KEY: ActiveKey = { id: 7, key: createSecretKey(randomBytes(32)) };

function appWith(configuration: Partial<AppConfiguration> = {}, appId = 'app-1'): AppRecord {
  return { appId, configuration: { ...DEFAULT_APP_CONFIGURATION, ...configuration } } as AppRecord;
}

/** The payload the ALTCHA widget submits for a challenge, solved by the real altcha-lib. */
async function solved(challenge: PowChallenge): Promise<string> {
  const derive = challenge.parameters.algorithm.startsWith('PBKDF2/') ? altchaPbkdf2 : altchaSha;
  const solution = await solveChallenge({ challenge, deriveKey: derive });
  assert.ok(solution !== null);
  return Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');
}

describe('the proof of work (ALTCHA v2)', () => {
  const pow = new ProofOfWork(
    () => KEY,
    (id) => (id === KEY.id ? KEY : undefined),
  );

  it("derives keys exactly as altcha-lib's algorithms do, for each algorithm and cost", async () => {
    for (const algorithm of POW_ALGORITHMS) {
      for (const cost of [1, 3]) {
        const salt = randomBytes(16);
        const password = randomBytes(20);
        const derive = algorithm.startsWith('PBKDF2/') ? altchaPbkdf2 : altchaSha;
        const theirs = await derive({ algorithm, cost, keyLength: 32, nonce: '', salt: '', keyPrefix: '00' }, salt, password);
        assert.deepEqual(await deriveKey(algorithm, cost, salt, password), Buffer.from(theirs.derivedKey), `${algorithm}, cost ${cost}`);
      }
    }
  });

  it('verifies what altcha-lib solves, for every algorithm, and nothing changed', async () => {
    for (const algorithm of POW_ALGORITHMS) {
      const app = appWith({ powAlgorithm: algorithm, powCost: algorithm.startsWith('PBKDF2/') ? 10 : 2, powMaxAttempts: 100 });
      const challenge = await pow.challenge(app, T0, 100);
      assert.deepEqual(challenge.parameters.data, { app: 'app-1', kid: 7 });
      assert.equal(challenge.parameters.expiresAt, Math.floor(T0 / 1000) + 300);
      const payload = await solved(challenge);
      const verified = await pow.verify(app, payload, T0 + 1000);
      assert.deepEqual(verified, {
        verdict: 'verified',
        serial: null,
        replayKey: challenge.signature,
        validUntil: (Math.floor(T0 / 1000) + 300) * 1000,
      });
      assert.deepEqual(await pow.verify(app, payload, T0 + 300_000), { verdict: 'invalid', problem: 'expired' });
      assert.deepEqual(await pow.verify(appWith({}, 'app-2'), payload, T0), { verdict: 'invalid', problem: 'other_app' });
    }
  });

  it('needs from half of the attempts to all of them', async () => {
    const app = appWith();
    for (let draw = 0; draw < 20; draw++) {
      const challenge = await pow.challenge(app, T0, 1000);
      const solution = await solveChallenge({ challenge, deriveKey: altchaSha });
      assert.ok(solution !== null && solution.counter >= 500 && solution.counter < 1000, String(solution?.counter));
    }
  });

  it('refuses a payload that is not one, or too large, as a value, never by throwing', async () => {
    const app = appWith();
    for (const payload of ['', '!!!', Buffer.from('[]').toString('base64'), Buffer.from('{"challenge":1}').toString('base64')]) {
      assert.deepEqual(await pow.verify(app, payload, T0), { verdict: 'invalid', problem: 'malformed' });
    }
    assert.deepEqual(await pow.verify(app, 'A'.repeat(5000), T0), { verdict: 'invalid', problem: 'too_large' });
    const challenge = await pow.challenge(app, T0, 100);
    const retired = new ProofOfWork(
      () => KEY,
      () => undefined,
    );
    assert.deepEqual(await retired.verify(app, await solved(challenge), T0), { verdict: 'invalid', problem: 'signature' });
  });

  it('signs the serial a challenge is claimed by: what altcha-lib solves verifies with it, and a serial changed or of another type does not', async () => {
    const serials = [41, 42];
    const withSerials = new ProofOfWork(
      () => KEY,
      (id) => (id === KEY.id ? KEY : undefined),
      async () => serials.shift()!,
    );
    const app = appWith({ powMaxAttempts: 100 });
    const challenge = await withSerials.challenge(app, T0, 100);
    assert.deepEqual(challenge.parameters.data, { app: 'app-1', kid: 7, serial: 41 });
    const payload = await solved(challenge);
    assert.deepEqual(await withSerials.verify(app, payload, T0 + 1000), {
      verdict: 'verified',
      serial: 41,
      replayKey: challenge.signature,
      validUntil: (Math.floor(T0 / 1000) + 300) * 1000,
    });
    assert.equal((await withSerials.challenge(app, T0, 100)).parameters.data.serial, 42);
    const altered = (serial: unknown, extra: Record<string, unknown> = {}) => {
      const decoded = JSON.parse(Buffer.from(payload, 'base64').toString()) as {
        challenge: { parameters: { data: Record<string, unknown> } };
      };
      decoded.challenge.parameters.data = { ...decoded.challenge.parameters.data, serial, ...extra };
      return Buffer.from(JSON.stringify(decoded)).toString('base64');
    };
    assert.deepEqual(await withSerials.verify(app, altered(42), T0), { verdict: 'invalid', problem: 'signature' });
    for (const wrong of ['41', -1, 1.5, 2 ** 53, null]) {
      assert.deepEqual(await withSerials.verify(app, altered(wrong), T0), { verdict: 'invalid', problem: 'malformed' }, String(wrong));
    }
    assert.deepEqual(await withSerials.verify(app, altered(41, { more: 1 }), T0), { verdict: 'invalid', problem: 'malformed' });
  });
});

describe('the serials of challenges', () => {
  /** A store's reservations: each a new block id, once `release` lets them through. */
  function reservations() {
    const made: number[] = [];
    let release: () => void = () => {};
    let gate = Promise.resolve();
    return {
      made,
      hold: () => {
        gate = new Promise((resolve) => (release = resolve));
      },
      release: () => release(),
      reserve: async (expiresAt: number) => {
        made.push(expiresAt);
        await gate;
        return made.length;
      },
    };
  }

  it('gives the serials of a block in order, one reservation for the requests that find it used up, a new block when it is', async () => {
    const store = reservations();
    const serials = new PowSerials(store.reserve);
    store.hold();
    const together = Promise.all(Array.from({ length: 3 }, () => serials.next(T0)));
    store.release();
    assert.deepEqual(await together, [SERIALS_PER_BLOCK, SERIALS_PER_BLOCK + 1, SERIALS_PER_BLOCK + 2]);
    assert.deepEqual(store.made, [T0 + BLOCK_USE_MS + CHALLENGE_LIFETIME_MS + 60_000], 'one reservation, kept past its last challenge');
    for (let used = 3; used < SERIALS_PER_BLOCK; used++) await serials.next(T0);
    assert.equal(await serials.next(T0), 2 * SERIALS_PER_BLOCK, 'the block used up: the first of the next');
    assert.equal(store.made.length, 2);
  });

  it('takes a new block once one has served BLOCK_USE_MS, so that every block expires', async () => {
    const store = reservations();
    const serials = new PowSerials(store.reserve);
    assert.equal(await serials.next(T0), SERIALS_PER_BLOCK);
    assert.equal(await serials.next(T0 + BLOCK_USE_MS - 1), SERIALS_PER_BLOCK + 1);
    assert.equal(await serials.next(T0 + BLOCK_USE_MS), 2 * SERIALS_PER_BLOCK);
    assert.deepEqual(
      store.made,
      [T0, T0 + BLOCK_USE_MS].map((at) => at + BLOCK_USE_MS + CHALLENGE_LIFETIME_MS + 60_000),
    );
  });

  it('gives no serial when its reservation fails, and reserves again at the next challenge', async () => {
    let fail = true;
    const serials = new PowSerials(async () => {
      if (fail) throw new Error('the database cannot be reached');
      return 5;
    });
    await assert.rejects(serials.next(T0), /cannot be reached/);
    fail = false;
    assert.equal(await serials.next(T0), 5 * SERIALS_PER_BLOCK);
  });
});

describe('X-Tessera-Attestation', () => {
  it('splits at the first dot into a known provider and a payload', () => {
    assert.equal(parseAttestationHeader(undefined), undefined);
    assert.deepEqual(parseAttestationHeader('pow.abc+/=='), { provider: 'pow', payload: 'abc+/==' });
    assert.deepEqual(parseAttestationHeader('android.a.b.c.d.e'), { provider: 'android', payload: 'a.b.c.d.e' });
    assert.deepEqual(parseAttestationHeader('debug.tdbg_x-y'), { provider: 'debug', payload: 'tdbg_x-y' });
    for (const malformed of ['pow', '.x', 'pow.', 'pow.a b', 'pow.a,b'])
      assert.deepEqual(parseAttestationHeader(malformed), { problem: 'malformed' });
    assert.deepEqual(parseAttestationHeader('recaptcha.x'), { problem: 'unknown_provider' });
    assert.deepEqual(parseAttestationHeader(`pow.${'a'.repeat(10_240)}`), { problem: 'too_large' });
  });
});

describe('anonymous tokens that carry an attestation (format 2)', () => {
  it('keep the length, say the provider, verify only unaltered; a token without one is format 1 as before', () => {
    for (const provider of ['pow', 'apple', 'android', 'debug'] as const) {
      const { token } = signAnonymousToken(KEY, 'app-1', T0, null, provider);
      assert.equal(token.length, 68);
      const presented = parseAnonymousToken(token)!;
      assert.equal(presented.facts.attestation, provider);
      assert.ok(anonymousTokenSignedBy(presented, KEY, 'app-1'));
      assert.equal(anonymousTokenSignedBy(presented, KEY, 'app-2'), false);
      const bytes = Buffer.from(token, 'base64url');
      bytes[33] = bytes[33] === 1 ? 2 : 1;
      const altered = parseAnonymousToken(bytes.toString('base64url'));
      assert.ok(altered === undefined || !anonymousTokenSignedBy(altered, KEY, 'app-1'), 'another provider breaks the MAC');
    }
    const plain = signAnonymousToken(KEY, 'app-1', T0, null).token;
    assert.equal(Buffer.from(plain, 'base64url')[0], 1);
    assert.equal(parseAnonymousToken(plain)!.facts.attestation, null);
  });
});

describe('the proof of work rising with the issuance rate', () => {
  it('doubles at the threshold and at each doubling of the rate, up to 64 times, and falls back when the rate does', () => {
    const rate = new IssuanceRate();
    const app = appWith({ powMaxAttempts: 1000, powRisesAbovePerMinute: 10 });
    for (let request = 0; request < 9; request++) rate.note(app, T0);
    assert.equal(rate.maxAttempts(app, T0), 1000);
    rate.note(app, T0);
    assert.equal(rate.maxAttempts(app, T0), 2000);
    for (let request = 0; request < 30; request++) rate.note(app, T0);
    assert.equal(rate.maxAttempts(app, T0), 8000, '40 a minute: 4 times the threshold');
    assert.equal(rate.maxAttempts(app, T0 + 60_000), 8000, 'the minute before counts for the next');
    assert.equal(rate.maxAttempts(app, T0 + 120_000), 1000);
    for (let request = 0; request < 100_000; request++) rate.note(app, T0 + 180_000);
    assert.equal(rate.maxAttempts(app, T0 + 180_000), 1000 * MAX_POW_RISE);
    const steady = appWith({ powMaxAttempts: 1000 });
    rate.note(steady, T0);
    assert.equal(rate.maxAttempts(steady, T0), 1000);
  });
});

describe("the Attestation page's summary", () => {
  it('reads the counts as requests by outcome, and the share enforcement refuses', () => {
    const kind = (type: string, principal: string | null, attempted: string | null, reason: string | null, count: number) =>
      ({ type, principal, attempted, reason, count }) as EventCountsDescription['totals'][number];
    const counts = [
      kind('token.issued', 'anonymous', null, 'attested_pow', 6),
      kind('token.issued', 'anonymous', null, 'attested_debug', 1),
      kind('token.issued', 'anonymous', null, 'attestation_missing', 2),
      kind('token.refused', null, 'anonymous', 'attestation_invalid', 1),
      kind('token.issued', 'anonymous', null, null, 5),
      kind('token.issued', 'admin', null, null, 9),
      kind('token.refused', null, 'admin', 'invalid_client', 3),
    ];
    const summary = attestationSummary({
      appId: 'app-1',
      per: 'day',
      since: '',
      until: '',
      totals: counts,
      buckets: [{ start: '2026-11-29T00:00:00.000Z', counts }],
    });
    assert.deepEqual(summary.total, {
      verified: { pow: 6, apple: 0, android: 0, debug: 1 },
      missing: 2,
      invalid: 1,
      replayed: 0,
      refused: 1,
      unclassified: 5,
    });
    assert.equal(summary.periods[0]!.start, '2026-11-29T00:00:00.000Z');
    assert.equal(refusedShare(summary.total), 0.3);
    assert.equal(refusedShare({ ...summary.total, verified: { pow: 0, apple: 0, android: 0, debug: 0 }, missing: 0, invalid: 0 }), null);
  });
});
