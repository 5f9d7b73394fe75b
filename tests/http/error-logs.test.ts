import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { assertError } from '../helpers/assert.js';
import { adminTokenOf, bearer, request, tokenUrl } from '../helpers/http.js';
import { createDeveloper, PASSWORD } from '../helpers/portal.js';
import { signInOverHttp } from '../helpers/portal-http.js';
import { serverForSuite } from '../helpers/server.js';

// What the logs keep of the errors answered, through the service's own logger: a 5xx of the API or
// of the portal is logged with its request's id and what was thrown; an error's internal detail is
// logged with the request's line and never sent to the client; no secret reaches either.

interface LogLine {
  level: number;
  msg: string;
  reqId?: string;
  req?: { method: string; path: string; remoteAddress: string };
  statusCode?: number;
  detail?: string;
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

  it("logs an error's internal detail with the request's line, never in the answer, without the body it was read from", async () => {
    const secret = 'a-client-secret-in-a-broken-body';
    const broken = await request(tokenUrl(server), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"grant_type": "client_credentials", "client_id": "${server.app.clientId}", "client_secret": "${secret}",}`,
    });
    assertError(broken, 400, 'invalid_request');
    assert.equal(broken.body.message, 'The request body is not valid JSON.');
    const [completed] = linesOf(broken.headers.get('x-request-id'));
    assert.equal(completed?.msg, 'request completed');
    assert.match(completed.detail ?? '', /^SyntaxError: at position \d+/);
    assert.ok(!broken.text.includes(completed.detail!), 'the detail is not in the answer');
    assert.ok(!logs.join('\n').includes(secret), 'the body is not in the logs');
  });

  it("logs a 5xx's internal detail with the error, and answers only the public message", async () => {
    const token = await adminTokenOf({ app: server.app, appUrl: server.appUrl });
    const apps = server.tessera.apps;
    const configure = apps.configure.bind(apps);
    apps.configure = () =>
      Promise.reject(
        new TesseraError('INTERNAL_ERROR', 'The service failed to handle this request.', { internalDetail: 'what went wrong inside' }),
      );
    try {
      const answer = await request(`${server.appUrl}/configuration`, {
        method: 'PATCH',
        headers: { authorization: bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify({ requireAppKey: true }),
      });
      assertError(answer, 500, 'INTERNAL_ERROR');
      assert.ok(!answer.text.includes('what went wrong inside'), 'the detail is not in the answer');
      const [failed] = linesOf(answer.headers.get('x-request-id'));
      assert.equal(failed?.msg, 'request failed');
      assert.equal(failed.detail, 'what went wrong inside');
    } finally {
      apps.configure = configure;
    }
    assert.ok(!logs.join('\n').includes(token), 'the token is not in the logs');
  });
});
