import assert from 'node:assert/strict';
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
