import assert from 'node:assert/strict';
import type { FakeClock } from './clock.js';
import { adminFields, bearer, request, requestToken, type AppTarget } from './http.js';

/** The two client addresses of the investigation: the one asked about, and another. */
export const ADDRESS_A = '203.0.113.7';
export const ADDRESS_B = '2001:db8::42';

/** A request through the trusted proxy, from `address`. */
export function from(address: string): Record<string, string> {
  return { 'x-forwarded-for': address };
}

/** Sets the server's clock to `time` (`14:02:00`, maybe with milliseconds) of 2026-03-10, UTC. */
export function atTime(clock: FakeClock, time: string): void {
  clock.time = Date.parse(`2026-03-10T${time}Z`);
}

/**
 * The morning the events API and the events page are asked about ("what happened between 14:02
 * and 14:05 from this address"): an admin token at 14:00 from a third address; wrong secrets from
 * A just before 14:02 and at 14:02, from B at 14:03:10; an admin token from A at 14:03:20; a bad
 * token from A a moment before 14:05; wrong secrets from A at 14:05 and from B at 14:06. Each answer
 * checked. Resolves with the admin token of 14:00.
 */
export async function recordTheMorning(clock: FakeClock, app: AppTarget & { appUrl: string }): Promise<string> {
  const wrongSecret = (address: string) => requestToken(app, adminFields(app, { client_secret: 'a guess' }), from(address));
  atTime(clock, '14:00:00');
  const admin = await requestToken(app, adminFields(app), from('198.51.100.9'));
  assert.equal(admin.status, 200, admin.text);
  atTime(clock, '14:01:59.999');
  assert.equal((await wrongSecret(ADDRESS_A)).status, 401);
  atTime(clock, '14:02:00');
  assert.equal((await wrongSecret(ADDRESS_A)).status, 401);
  atTime(clock, '14:03:10');
  assert.equal((await wrongSecret(ADDRESS_B)).status, 401);
  atTime(clock, '14:03:20');
  assert.equal((await requestToken(app, adminFields(app), from(ADDRESS_A))).status, 200);
  atTime(clock, '14:04:59.999');
  const badToken = await request(`${app.appUrl}/whoami`, { headers: { authorization: bearer('A'.repeat(43)), ...from(ADDRESS_A) } });
  assert.equal(badToken.status, 401);
  atTime(clock, '14:05:00');
  assert.equal((await wrongSecret(ADDRESS_A)).status, 401);
  atTime(clock, '14:06:00');
  assert.equal((await wrongSecret(ADDRESS_B)).status, 401);
  return admin.body.access_token as string;
}
