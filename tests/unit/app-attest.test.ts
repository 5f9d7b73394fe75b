import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { encode } from 'cbor2';
import {
  APPLE_ROOT,
  APPLE_ROOT_FINGERPRINT,
  verifyAssertion,
  verifyAttestation,
  type AppAttestSettings,
} from '../../src/attestation/apple.js';
import { PACKAGE_ROOT } from '../../src/package-root.js';
import { assertionOf } from '../helpers/attestation.js';

/**
 * Apple's example attestation (the Attestation Object Validation Guide: team 0352187391, bundle
 * com.apple.example_app_attest, challenge "test_server_challenge", whose raw bytes stand for the
 * clientDataHash there). Its receipt says 3,877 bytes and holds 3,856 (the guide shortened it), which
 * no CBOR decoder reads past: the receipt's length header is set to what it holds. Nothing that is
 * checked (the certificates, the authenticator data) is changed.
 */
function appleExample(): Buffer {
  const object = Buffer.from(
    readFileSync(join(PACKAGE_ROOT, 'tests', 'fixtures', 'apple-app-attest-example.b64'), 'utf8').trim(),
    'base64',
  );
  const receipt = object.indexOf(Buffer.from('receipt'));
  const authData = object.indexOf(Buffer.from('hauthData'));
  assert.equal(object.readUInt16BE(receipt + 8), 3877);
  object.writeUInt16BE(authData - (receipt + 10), receipt + 8);
  return object;
}

const EXAMPLE: AppAttestSettings = { teamId: '0352187391', bundleId: 'com.apple.example_app_attest', environment: 'production' };
const KEY_ID = Buffer.from('bSrEhF8TIzIvWSPwvZ0i2+UOBre4ASH84rK15m6emNY=', 'base64');
const CLIENT_DATA_HASH = Buffer.from('test_server_challenge');
/** The leaf certificate of the example is valid from 2024-04-17T16:14:53Z to 2024-04-20T16:14:53Z. */
const WHEN_VALID = Date.parse('2024-04-18T12:00:00Z');

describe('App Attest: attestation, on Apple\u2019s published example', () => {
  it('pins Apple\u2019s App Attestation root by its fingerprint', () => {
    assert.equal(createHash('sha256').update(APPLE_ROOT.raw).digest('hex'), APPLE_ROOT_FINGERPRINT);
    assert.match(APPLE_ROOT.subject, /Apple App Attestation Root CA/);
  });

  it('verifies: the chain to Apple\u2019s root, the nonce, the key id, the App ID, counter 0, production', () => {
    const checked = verifyAttestation(EXAMPLE, appleExample(), CLIENT_DATA_HASH, KEY_ID, WHEN_VALID);
    assert.equal(checked.verdict, 'verified', JSON.stringify(checked));
    assert.ok(checked.verdict === 'verified');
    assert.equal(checked.value.publicKey.length, 65);
    assert.deepEqual(createHash('sha256').update(checked.value.publicKey).digest(), KEY_ID);
  });

  it('refuses it after its certificate expired, for another challenge, key, team or bundle, or in development', () => {
    const refused = (settings: AppAttestSettings, clientDataHash: Buffer, keyId: Buffer, now: number) =>
      verifyAttestation(settings, appleExample(), clientDataHash, keyId, now);
    assert.deepEqual(refused(EXAMPLE, CLIENT_DATA_HASH, KEY_ID, Date.parse('2024-04-21T00:00:00Z')), {
      verdict: 'invalid',
      problem: 'signature',
    });
    assert.deepEqual(refused(EXAMPLE, Buffer.from('another_challenge'), KEY_ID, WHEN_VALID), { verdict: 'invalid', problem: 'signature' });
    assert.deepEqual(refused(EXAMPLE, CLIENT_DATA_HASH, Buffer.alloc(32, 1), WHEN_VALID), { verdict: 'invalid', problem: 'signature' });
    assert.deepEqual(refused({ ...EXAMPLE, teamId: 'ABCDE12345' }, CLIENT_DATA_HASH, KEY_ID, WHEN_VALID), {
      verdict: 'invalid',
      problem: 'other_app',
    });
    assert.deepEqual(refused({ ...EXAMPLE, bundleId: 'com.example.other' }, CLIENT_DATA_HASH, KEY_ID, WHEN_VALID), {
      verdict: 'invalid',
      problem: 'other_app',
    });
    assert.deepEqual(refused({ ...EXAMPLE, environment: 'development' }, CLIENT_DATA_HASH, KEY_ID, WHEN_VALID), {
      verdict: 'invalid',
      problem: 'integrity',
    });
  });

  it('refuses what is not an attestation object, and a chain that does not lead to Apple\u2019s root, without throwing', () => {
    for (const object of [
      Buffer.from('not cbor'),
      Buffer.from(encode({ fmt: 'packed' })),
      Buffer.from(encode({ fmt: 'apple-appattest', attStmt: { x5c: [] } })),
    ]) {
      assert.deepEqual(verifyAttestation(EXAMPLE, object, CLIENT_DATA_HASH, KEY_ID, WHEN_VALID), {
        verdict: 'invalid',
        problem: 'malformed',
      });
    }
    const example = appleExample();
    const certificate = example.indexOf(Buffer.from('3082', 'hex'), 40);
    const forged = Buffer.from(example);
    forged[certificate + 200] = forged[certificate + 200]! ^ 0xff; // a byte inside the leaf certificate's signed part
    assert.equal(verifyAttestation(EXAMPLE, forged, CLIENT_DATA_HASH, KEY_ID, WHEN_VALID).verdict, 'invalid');
  });
});

describe('App Attest: assertions by a key attested before', () => {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { x, y } = publicKey.export({ format: 'jwk' });
  const point = Buffer.concat([Buffer.from([4]), Buffer.from(x!, 'base64url'), Buffer.from(y!, 'base64url')]);
  const appId = `${EXAMPLE.teamId}.${EXAMPLE.bundleId}`;
  const clientDataHash = createHash('sha256').update('a challenge').digest();

  it('verifies a signature over the challenge with a counter above the last one', () => {
    assert.deepEqual(verifyAssertion(EXAMPLE, assertionOf(privateKey, appId, 5, clientDataHash), clientDataHash, point, 4), {
      verdict: 'verified',
      value: 5,
    });
  });

  it('refuses a counter not above the last, another challenge, another key, another app, and what is not one', () => {
    assert.deepEqual(verifyAssertion(EXAMPLE, assertionOf(privateKey, appId, 4, clientDataHash), clientDataHash, point, 4), {
      verdict: 'replayed',
    });
    assert.deepEqual(verifyAssertion(EXAMPLE, assertionOf(privateKey, appId, 5, clientDataHash), Buffer.alloc(32), point, 4), {
      verdict: 'invalid',
      problem: 'signature',
    });
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    assert.deepEqual(verifyAssertion(EXAMPLE, assertionOf(other, appId, 5, clientDataHash), clientDataHash, point, 4), {
      verdict: 'invalid',
      problem: 'signature',
    });
    assert.deepEqual(
      verifyAssertion(EXAMPLE, assertionOf(privateKey, 'ABCDE12345.com.example.other', 5, clientDataHash), clientDataHash, point, 4),
      {
        verdict: 'invalid',
        problem: 'other_app',
      },
    );
    assert.deepEqual(verifyAssertion(EXAMPLE, Buffer.from('nope'), clientDataHash, point, 4), { verdict: 'invalid', problem: 'malformed' });
  });
});
