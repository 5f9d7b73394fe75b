import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createDeveloper, PASSWORD } from '../helpers/portal.js';
import { signInOverHttp } from '../helpers/portal-http.js';
import { serverForSuite } from '../helpers/server.js';

// What the logs keep of the errors answered, through the service's own logger: a 5xx of the API or
// of the portal is logged with its request's id and what was thrown, and no secret.

interface LogLine {
  level: number;
  msg: string;
  reqId?: string;
  req?: { method: string; path: string; remoteAddress: string };
  statusCode?: number;
  err?: { message: string };
}

describe('errors answered, in the logs', () => {
  const logs: string[] = [];
  const server = serverForSuite({ logs, logRequests: true });

  /** The lines logged for the request answered with this id. */
  function linesOf(requestId: string | null): LogLine[] {
    assert.ok(requestId !== null, 'the answer has an X-Request-Id');
    return logs.map((line) => JSON.parse(line) as LogLine).filter((line) => line.reqId === requestId);
  }

  it("logs a portal page's 500 (a store failure) with its request, and no password, cookie or form token", async () => {
    const developer = await createDeveloper(server, 'failing@example.com');
    const client = await signInOverHttp(server, developer.email);
    const members = server.tessera.store.developers.members;
    const ofDeveloper = members.ofDeveloper.bind(members);
    members.ofDeveloper = () => Promise.reject(new Error('disk I/O error (a store failure of the test)'));
    try {
      const answer = await client.send('/portal/');
      assert.equal(answer.status, 500);
      assert.ok(!answer.text.includes('disk I/O error'), 'the page tells nothing of the failure');
      const [failed, completed] = linesOf(answer.headers.get('x-request-id'));
      assert.equal(failed?.msg, 'request failed');
      assert.equal(failed.level, 50);
      assert.deepEqual(failed.req, { method: 'GET', path: '/portal/', remoteAddress: '127.0.0.1' });
      assert.equal(failed.err?.message, 'disk I/O error (a store failure of the test)');
      assert.equal(completed?.statusCode, 500);
    } finally {
      members.ofDeveloper = ofDeveloper;
    }
    const logged = logs.join('\n');
    for (const [what, secret] of [['the password', PASSWORD], ...client.cookies]) {
      assert.ok(!logged.includes(secret!), `${what} is in the logs`);
    }
  });
});
