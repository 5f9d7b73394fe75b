import assert from 'node:assert/strict';
import { errorShapeProblems, type JsonResponse } from './server.js';

/** Asserts the contract's error: status, code in both fields, a message, JSON, no '%'. */
export function assertError(response: JsonResponse, status: number, code: string): void {
  assert.deepEqual(errorShapeProblems(response, code, status), [], `response: ${response.status} ${response.text}`);
}
