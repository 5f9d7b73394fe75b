import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { adminFields, basic, bearer, request, requestToken, startServer, type TestServer } from '../helpers/server.js';

describe('smoke: a token in each variant, whoami in each mode', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => server.close());

  it('issues an admin token that whoami resolves as admin', async () => {
    const token = await requestToken(server, adminFields(server));
    assert.equal(token.status, 200);
    const whoami = await request(`${server.appUrl}/whoami`, { headers: { authorization: bearer(token.body.access_token) } });
    assert.deepEqual(whoami.body, { appId: server.app.appId, principal: 'admin', id: server.app.adminId, auth: 'bearer', expiresAt: null });
  });

  it('answers Basic anonymous', async () => {
    const whoami = await request(`${server.appUrl}/whoami`, { headers: { authorization: basic(server.app.appId) } });
    assert.equal(whoami.body.principal, 'anonymous');
  });
});
