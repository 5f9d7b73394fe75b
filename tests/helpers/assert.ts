import assert from 'node:assert/strict';
import { isTesseraError } from 'tessera-tokens/internal/errors.js';
import type { JsonResponse } from './http.js';

// The contract's checks on an answer, shared by every test that talks HTTP to Tessera or to a
// service that mounts its middleware.

/** The challenge of a 401 INVALID_TOKEN. */
export const INVALID_TOKEN_CHALLENGE = 'Bearer error="invalid_token"';
/** The challenge of a 401 UNAUTHORIZED, to the letter. */
export const UNAUTHORIZED_CHALLENGE = 'Basic realm="tessera", Bearer realm="tessera"';

/** What an error check reads of an answer: `Outcome`s of processes have no headers when no answer came. */
export interface Answer {
  status: number;
  headers: Headers | undefined;
  body: any;
  text: string;
}

/**
 * The contract's error, as a list of problems (empty: fine): the status, and a JSON body
 * `{errorCode, error, error_description, message}` with the code twice, the message twice, no '%'.
 */
export function errorProblems(response: Answer, status: number, code: string): string[] {
  const problems: string[] = [];
  if (response.status !== status) problems.push(`status ${response.status}, expected ${status}`);
  const body = response.body as Record<string, unknown> | undefined;
  if (body === undefined || typeof body !== 'object' || body === null)
    return [...problems, `body is not JSON: ${JSON.stringify(response.text)}`];
  if (body.errorCode !== code) problems.push(`errorCode ${String(body.errorCode)}, expected ${code}`);
  if (body.error !== code) problems.push(`error ${String(body.error)}, expected ${code}`);
  if (typeof body.message !== 'string' || body.message === '') problems.push('message missing');
  if (body.error_description !== body.message) problems.push('error_description differs from message');
  if (response.text.includes('%')) problems.push('body contains a % character');
  if (!(response.headers?.get('content-type') ?? '').startsWith('application/json')) problems.push('content-type is not JSON');
  return problems;
}

/** The code of the Tessera error `promise` rejects with, or `resolved`; any other error is thrown on. */
export async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    if (isTesseraError(error)) return error.code;
    throw error;
  }
}

/** Asserts the contract's error: status, code in both fields, a message, JSON, no '%'. */
export function assertError(response: JsonResponse, status: number, code: string): void {
  assert.deepEqual(errorProblems(response, status, code), [], `response: ${response.status} ${response.text}`);
}

/** 401 INVALID_TOKEN with `WWW-Authenticate: Bearer error="invalid_token"`; the body does not echo `token`. */
export function assertInvalidToken(response: JsonResponse, token?: string): void {
  assertError(response, 401, 'INVALID_TOKEN');
  assert.equal(response.headers.get('www-authenticate'), INVALID_TOKEN_CHALLENGE);
  if (token !== undefined && token !== '') assert.ok(!response.text.includes(token), 'the error echoes the token');
}

/** 401 UNAUTHORIZED with a challenge naming Basic and Bearer, or exactly `challenge` where given. */
export function assertUnauthorized(response: JsonResponse, challenge?: string): void {
  assertError(response, 401, 'UNAUTHORIZED');
  const answered = response.headers.get('www-authenticate');
  if (challenge !== undefined) {
    assert.equal(answered, challenge);
    return;
  }
  assert.match(answered ?? '', /\bBasic\b/, `WWW-Authenticate: ${answered}`);
  assert.match(answered ?? '', /\bBearer\b/, `WWW-Authenticate: ${answered}`);
}
