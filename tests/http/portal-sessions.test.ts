import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createDeveloper } from '../helpers/portal.js';
import { signInOverHttp } from '../helpers/portal-http.js';
import { startServer, type TestServer } from '../helpers/server.js';

// Portal sessions live in the store: two instances on one store see the same sessions, and one
// ended on either is ended on both at once.

let first: TestServer;
let second: TestServer;

before(async () => {
  first = await startServer();
  second = await startServer({ testStore: first.testStore });
});
after(async () => {
  await second?.close();
  await first?.close();
});

describe('portal sessions across instances', () => {
  it('a session started on one instance works on the other, and signing out on either ends it on both', async () => {
    const developer = await createDeveloper(first, 'both@example.com');
    const client = await signInOverHttp(first, developer.email);
    const onSecond = async () => {
      const response = await fetch(`${second.baseUrl}/portal/`, {
        headers: { cookie: [...client.cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
        redirect: 'manual',
      });
      return { status: response.status, location: response.headers.get('location'), text: await response.text() };
    };
    const signedIn = await onSecond();
    assert.equal(signedIn.status, 200, signedIn.text.slice(0, 200));
    assert.match(signedIn.text, /both@example\.com/);

    const sessionCookie = client.cookies.get('tessera-session');
    assert.ok(sessionCookie !== undefined);
    const page = await client.page('/portal/');
    const signedOut = await client.post('/portal/sign-out', { _csrf: page.csrf });
    assert.equal(signedOut.status, 303);
    // The cookie is gone from the client: send the old one to the second instance.
    const stale = await fetch(`${second.baseUrl}/portal/`, {
      headers: { cookie: `tessera-session=${sessionCookie}` },
      redirect: 'manual',
    });
    assert.equal(stale.status, 303);
    assert.match(stale.headers.get('location') ?? '', /^\/portal\/sign-in/);
  });
});
