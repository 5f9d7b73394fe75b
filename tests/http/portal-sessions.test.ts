import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createDeveloper, PASSWORD } from '../helpers/portal.js';
import { portalClient, signInOverHttp, type PortalClient } from '../helpers/portal-http.js';
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

describe('where signing in leads (next)', () => {
  // Each becomes the Location header: CR/LF, a character above U+00FF, and any other one outside
  // printable ASCII cannot be sent there (a browser's own next is always percent-encoded).
  const UNSENDABLE = [
    '/portal/apps\r\nX-Injected: yes',
    '/portal/apps\u2028',
    '/portal/caf\u00e9',
    '/portal/\u{1f600}',
    '/portal/a b',
    '/portal/\u0000',
  ];
  // Same-origin, but not a portal page once the browser resolves them; or another site.
  const ELSEWHERE = [
    '/portal/../api/apps/x/whoami',
    '/portal/%2e%2E/healthz',
    '/portal/.%2e/',
    '/portal//evil.example',
    '/portal/\\evil.example',
    '//evil.example/portal/',
    'https://evil.example/portal/',
    '/healthz',
  ];

  const assertSignedIn = async (client: PortalClient, what: string) => {
    assert.ok(client.cookies.has('tessera-session'), `${what}: the session cookie is set`);
    assert.equal((await client.get('/portal/')).status, 200, `${what}: the session works`);
  };

  it('a next that cannot be sent as a Location, or that leads out of the portal: 303 to /portal/, with the session cookie', async () => {
    await createDeveloper(first, 'next@example.com');
    for (const next of [...UNSENDABLE, ...ELSEWHERE]) {
      const client = portalClient(first);
      const form = await client.page(`/portal/sign-in?next=${encodeURIComponent(next)}`);
      const signedIn = await client.post('/portal/sign-in', { _csrf: form.csrf, email: 'next@example.com', password: PASSWORD, next });
      assert.equal(signedIn.status, 303, `${JSON.stringify(next)}: ${signedIn.status} ${signedIn.text.slice(0, 200)}`);
      assert.equal(signedIn.location, '/portal/', JSON.stringify(next));
      await assertSignedIn(client, JSON.stringify(next));
      const again = await client.get(`/portal/sign-in?next=${encodeURIComponent(next)}`);
      assert.equal(again.status, 303, `signed in already, ${JSON.stringify(next)}`);
      assert.equal(again.location, '/portal/');
    }
  });

  it('a portal page in printable ASCII is where signing in leads, query and percent-encoding kept', async () => {
    await createDeveloper(first, 'next-kept@example.com');
    for (const next of ['/portal/account', '/portal/apps/new?x=1&y=%C3%A9#top', '/portal/caf%C3%A9', "/portal/a-b_c.d~e!$'()*+,;=:@"]) {
      const client = portalClient(first);
      const form = await client.page(`/portal/sign-in?next=${encodeURIComponent(next)}`);
      const signedIn = await client.post('/portal/sign-in', { _csrf: form.csrf, email: 'next-kept@example.com', password: PASSWORD, next });
      assert.equal(signedIn.status, 303);
      assert.equal(signedIn.location, next);
      assert.equal((await client.get(`/portal/sign-in?next=${encodeURIComponent(next)}`)).location, next);
    }
  });

  it('signing up (PORTAL_SIGNUP=open) with a next that cannot be sent: 303 to /portal/, signed in', async () => {
    const open = await startServer({ testStore: first.testStore, portalSignup: 'open' });
    try {
      for (const [index, next] of UNSENDABLE.entries()) {
        const client = portalClient(open);
        const form = await client.page(`/portal/sign-up?next=${encodeURIComponent(next)}`);
        const made = await client.post('/portal/sign-up', {
          _csrf: form.csrf,
          email: `signed-up-${index}@example.com`,
          password: PASSWORD,
          repeat: PASSWORD,
          next,
        });
        assert.equal(made.status, 303, `${JSON.stringify(next)}: ${made.status} ${made.text.slice(0, 200)}`);
        assert.equal(made.location, '/portal/');
        await assertSignedIn(client, JSON.stringify(next));
        assert.equal((await client.get(`/portal/sign-up?next=${encodeURIComponent(next)}`)).location, '/portal/');
      }
    } finally {
      await open.close();
    }
  });
});
