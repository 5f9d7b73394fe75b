import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_REQUEST_ID_LENGTH } from '../../src/http/request-id.js';
import { adminTokenOf, basic, bearer, request } from '../helpers/http.js';
import { serverForSuite } from '../helpers/server.js';

/** A made id: the process's random prefix and a count. */
const MADE = /^[0-9a-f]{16}-[0-9a-z]+$/;
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

describe('X-Request-Id: taken when short and safe, made otherwise, and on every answer', () => {
  const server = serverForSuite();

  async function idOf(path: string, headers: Record<string, string> = {}, init: RequestInit = {}): Promise<string | null> {
    const response = await request(`${server.baseUrl}${path}`, { ...init, headers });
    return response.headers.get('x-request-id');
  }

  it('a short, safe id sent by the client is echoed as it is', async () => {
    for (const id of [
      'abc-123',
      'f81d4fae-7dec-11d0-a765-00a0c91e6bf6',
      'Root=1-67891233-abcdef012345678912345678;Parent=53995c3f',
      'a'.repeat(128),
    ]) {
      assert.equal(await idOf('/healthz', { 'x-request-id': id }), id);
    }
  });

  it('none sent: a new one each time, with the process’s prefix', async () => {
    const first = await idOf('/healthz');
    const second = await idOf('/healthz');
    assert.match(first ?? '', MADE);
    assert.match(second ?? '', MADE);
    assert.notEqual(first, second);
    assert.equal(first?.split('-')[0], second?.split('-')[0]);
  });

  it(`too long (over ${MAX_REQUEST_ID_LENGTH} characters), or with unsafe characters: replaced by a new one, never echoed`, async () => {
    for (const id of [
      'a'.repeat(MAX_REQUEST_ID_LENGTH + 1),
      'has space',
      'quote"d',
      '<script>',
      'comma,separated',
      'tab\there',
      'back\\slash',
    ]) {
      const echoed = await idOf('/healthz', { 'x-request-id': id });
      assert.match(echoed ?? '', MADE, `${JSON.stringify(id)} gave ${echoed}`);
    }
  });

  it('two X-Request-Id headers: replaced', async () => {
    const headers = new Headers();
    headers.append('x-request-id', 'one');
    headers.append('x-request-id', 'two');
    const response = await fetch(`${server.baseUrl}/healthz`, { headers });
    await response.arrayBuffer();
    assert.match(response.headers.get('x-request-id') ?? '', MADE);
  });

  it('no X-Request-Id but a valid W3C traceparent: the trace id, so that the log line and the trace share it', async () => {
    assert.equal(await idOf('/healthz', { traceparent: TRACEPARENT }), TRACE_ID);
    assert.equal(await idOf('/healthz', { traceparent: TRACEPARENT, 'x-request-id': 'mine' }), 'mine');
    for (const invalid of [
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `ff-${TRACE_ID}-00f067aa0ba902b7-01`,
      `00-${TRACE_ID.toUpperCase()}-00f067aa0ba902b7-01`,
      'nonsense',
    ]) {
      assert.match((await idOf('/healthz', { traceparent: invalid })) ?? '', MADE, invalid);
    }
  });

  it('on errors, 404s, 405s and refused credentials too', async () => {
    const headers = { 'x-request-id': 'err-1' };
    assert.equal(await idOf('/no/such/path', headers), 'err-1');
    assert.equal(await idOf(`/api/apps/${server.app.appId}/whoami`, headers), 'err-1'); // 401
    assert.equal(await idOf(`/api/apps/${server.app.appId}/whoami`, { ...headers, authorization: bearer('not-a-token') }), 'err-1');
    assert.equal(await idOf('/healthz', headers, { method: 'DELETE' }), 'err-1'); // 405
    assert.equal(await idOf('/api/apps/%zz/whoami', headers), 'err-1'); // a bad percent-escape: refused before any hook
    const tooLarge = await request(`${server.baseUrl}/api/apps/${server.app.appId}/oauth2/token`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', authorization: basic(server.app.appId) },
      body: JSON.stringify({ grant_type: 'client_credentials', padding: 'x'.repeat(10_000) }),
    });
    assert.equal(tooLarge.status, 413);
    assert.equal(tooLarge.headers.get('x-request-id'), 'err-1');
    const badJson = await request(`${server.baseUrl}/api/apps/${server.app.appId}/oauth2/token`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', authorization: basic(server.app.appId) },
      body: '{',
    });
    assert.equal(badJson.status, 400);
    assert.equal(badJson.headers.get('x-request-id'), 'err-1');
  });

  it('on the token endpoint and forward authentication, allowed or refused', async () => {
    const token = await adminTokenOf(server);
    const tokenAnswer = await request(`${server.baseUrl}/api/apps/${server.app.appId}/oauth2/token`, {
      method: 'POST',
      headers: { 'x-request-id': 'tok-1', 'content-type': 'application/json', authorization: basic(server.app.appId) },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: server.app.appId, client_secret: server.app.appKey }),
    });
    assert.equal(tokenAnswer.status, 200, tokenAnswer.text);
    assert.equal(tokenAnswer.headers.get('x-request-id'), 'tok-1');
    const uri = `/api/apps/${server.app.appId}/objects`;
    const allowed = await request(`${server.baseUrl}/api/forward-auth`, {
      headers: { 'x-request-id': 'fwd-1', 'x-original-uri': uri, authorization: bearer(token) },
    });
    assert.equal(allowed.status, 200, allowed.text);
    assert.equal(allowed.headers.get('x-request-id'), 'fwd-1');
    const refused = await request(`${server.baseUrl}/api/forward-auth`, { headers: { 'x-request-id': 'fwd-2', 'x-original-uri': uri } });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('x-request-id'), 'fwd-2');
  });

  it('on the portal and the OpenAPI document', async () => {
    assert.equal(await idOf('/portal/sign-in', { 'x-request-id': 'page-1' }), 'page-1');
    assert.equal(await idOf('/openapi.json', { 'x-request-id': 'doc-1' }), 'doc-1');
  });
});
