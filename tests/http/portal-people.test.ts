import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OPERATOR } from '../../src/request-context.js';
import { createDeveloper, PASSWORD } from '../helpers/portal.js';
import { PortalBrowser, signedInBrowser, startSignUpServer } from '../helpers/portal-http-people.js';
import { startServer, type TestServer } from '../helpers/server.js';

// The portal's people and account forms over plain HTTP, on both stores: who may post what, the
// form token on every form, the one-time links, and sign-up as the operator configured it.

let server: TestServer;

before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.close();
});

const NEW_PASSWORD = 'a brand new password, long';

/** An app owned by a new developer, with a collaborator; both signed in. */
async function appWithPeople(name: string) {
  const owner = await createDeveloper(server, `${name}-owner@example.com`);
  const collaborator = await createDeveloper(server, `${name}-collaborator@example.com`);
  const app = await server.tessera.ownedApps.create(name, owner.email, OPERATOR);
  const link = await server.tessera.members.invite(app.appId, collaborator.email, OPERATOR);
  await server.tessera.members.acceptInvitation(new URL(link.path, 'http://x').searchParams.get('token')!, (await server.tessera.developers.find(collaborator.email)), OPERATOR);
  return {
    app,
    owner: { ...owner, browser: await signedInBrowser(server.baseUrl, owner.email, PASSWORD) },
    collaborator: { ...collaborator, browser: await signedInBrowser(server.baseUrl, collaborator.email, PASSWORD) },
  };
}

async function roles(appId: string): Promise<Record<string, string>> {
  return Object.fromEntries((await server.tessera.members.membersOf(appId)).map((member) => [member.email, member.role]));
}

async function invitations(appId: string): Promise<number> {
  return (await server.testStore.store.developers.links.invitationsOf(appId, Date.now())).length;
}

describe('the people page over HTTP', () => {
  it('lets the owner invite: the link is shown whole, once; the form without its token changes nothing (403)', async () => {
    const { app, owner } = await appWithPeople('invite');
    await owner.browser.get(`/portal/apps/${app.appId}/people`);
    const refused = await owner.browser.post(`/portal/apps/${app.appId}/people/invitations`, { email: 'new@example.com' }, { csrf: null });
    assert.equal(refused.status, 403);
    const forged = await owner.browser.post(`/portal/apps/${app.appId}/people/invitations`, { email: 'new@example.com' }, { csrf: 'forged' });
    assert.equal(forged.status, 403);
    assert.equal(await invitations(app.appId), 0);

    const invited = await owner.browser.post(`/portal/apps/${app.appId}/people/invitations`, { email: ' New@Example.com ' });
    assert.equal(invited.status, 200, invited.text);
    assert.match(invited.text, new RegExp(`${server.baseUrl}/portal/accept-invitation\\?token=[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+`));
    assert.match(invited.text, /new@example\.com/);
    assert.equal(invited.headers.get('cache-control'), 'no-store');
    assert.equal(await invitations(app.appId), 1);
    const again = await owner.browser.get(`/portal/apps/${app.appId}/people`);
    assert.ok(!again.text.includes('accept-invitation?token='), 'the link is shown once');

    const bad = await owner.browser.post(`/portal/apps/${app.appId}/people/invitations`, { email: 'not an address' });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /role="alert"/);
    assert.match(bad.text, /value="not an address"/);
  });

  it('lets the owner remove a collaborator, not without the form token', async () => {
    const { app, owner, collaborator } = await appWithPeople('remove');
    const confirm = await owner.browser.get(`/portal/apps/${app.appId}/people/${collaborator.id}/remove`);
    assert.equal(confirm.status, 200);
    assert.match(confirm.text, /Remove the collaborator/);
    const refused = await owner.browser.post(`/portal/apps/${app.appId}/people/${collaborator.id}/remove`, {}, { csrf: null });
    assert.equal(refused.status, 403);
    assert.equal((await roles(app.appId))[collaborator.email], 'collaborator');
    const removed = await owner.browser.post(`/portal/apps/${app.appId}/people/${collaborator.id}/remove`, {});
    assert.equal(removed.status, 303);
    assert.equal(removed.location, `/portal/apps/${app.appId}/people`);
    assert.equal((await roles(app.appId))[collaborator.email], undefined);
    assert.equal((await collaborator.browser.get(`/portal/apps/${app.appId}`)).status, 404);
    // The owner is not removed this way: 404, as for no member at all.
    assert.equal((await owner.browser.post(`/portal/apps/${app.appId}/people/${owner.id}/remove`, {})).status, 404);
    assert.equal((await owner.browser.post(`/portal/apps/${app.appId}/people/not-a-uuid/remove`, {})).status, 404);
  });

  it('shows a collaborator the people but no form; its posts are 403; it may leave', async () => {
    const { app, owner, collaborator } = await appWithPeople('collaborate');
    const people = await collaborator.browser.get(`/portal/apps/${app.appId}/people`);
    assert.equal(people.status, 200);
    assert.ok(people.text.includes(owner.email) && people.text.includes(collaborator.email));
    assert.ok(!people.text.includes('/people/invitations'), 'no invite form');
    assert.ok(!people.text.includes('Remove'), 'no remove link');
    assert.equal((await collaborator.browser.post(`/portal/apps/${app.appId}/people/invitations`, { email: 'friend@example.com' })).status, 403);
    assert.equal(await invitations(app.appId), 0);
    const third = await createDeveloper(server, 'collaborate-third@example.com');
    await server.tessera.members.acceptInvitation(
      new URL((await server.tessera.members.invite(app.appId, third.email, OPERATOR)).path, 'http://x').searchParams.get('token')!,
      await server.tessera.developers.find(third.email),
      OPERATOR,
    );
    assert.equal((await collaborator.browser.get(`/portal/apps/${app.appId}/people/${third.id}/remove`)).status, 403);
    assert.equal((await collaborator.browser.post(`/portal/apps/${app.appId}/people/${third.id}/remove`, {})).status, 403);
    assert.equal((await roles(app.appId))[third.email], 'collaborator');

    const left = await collaborator.browser.post(`/portal/apps/${app.appId}/people/${collaborator.id}/remove`, {});
    assert.equal(left.status, 303);
    assert.equal(left.location, '/portal/');
    assert.equal((await roles(app.appId))[collaborator.email], undefined);
  });

  it("gives another developer 404 for every people page and form of an app not theirs, and changes nothing", async () => {
    const { app, collaborator } = await appWithPeople('private');
    const stranger = await createDeveloper(server, 'stranger@example.com');
    const browser = await signedInBrowser(server.baseUrl, stranger.email, PASSWORD);
    await browser.get('/portal/');
    for (const path of [`/portal/apps/${app.appId}/people`, `/portal/apps/${app.appId}/people/${collaborator.id}/remove`]) {
      assert.equal((await browser.get(path)).status, 404, path);
    }
    await browser.get('/portal/');
    assert.equal((await browser.post(`/portal/apps/${app.appId}/people/invitations`, { email: stranger.email })).status, 404);
    assert.equal((await browser.post(`/portal/apps/${app.appId}/people/${collaborator.id}/remove`, {})).status, 404);
    assert.equal(await invitations(app.appId), 0);
    assert.equal((await roles(app.appId))[collaborator.email], 'collaborator');
  });
});

describe('accepting an invitation over HTTP', () => {
  it('sends a visitor to sign in first; then only the invited address accepts, with the form token, once', async () => {
    const owner = await createDeveloper(server, 'accept-owner@example.com');
    const invitee = await createDeveloper(server, 'accept-invitee@example.com');
    await createDeveloper(server, 'accept-other@example.com');
    const app = await server.tessera.ownedApps.create('Accepted', owner.email, OPERATOR);
    const link = await server.tessera.members.invite(app.appId, invitee.email, OPERATOR);
    const token = new URL(link.path, 'http://x').searchParams.get('token')!;

    const visitor = new PortalBrowser(server.baseUrl);
    const first = await visitor.get(link.path);
    assert.equal(first.status, 303);
    assert.equal(first.location, `/portal/sign-in?next=${encodeURIComponent(link.path)}`);
    assert.equal(first.headers.get('referrer-policy'), 'no-referrer');

    const other = await signedInBrowser(server.baseUrl, 'accept-other@example.com', PASSWORD);
    const wrong = await other.get(link.path);
    assert.equal(wrong.status, 403);
    assert.match(wrong.text, /for another address/);
    assert.equal((await other.post('/portal/accept-invitation', { token })).status, 403);

    const browser = await signedInBrowser(server.baseUrl, invitee.email, PASSWORD);
    const shown = await browser.get(link.path);
    assert.equal(shown.status, 200);
    assert.match(shown.text, /Invitation to Accepted/);
    assert.equal((await browser.post('/portal/accept-invitation', { token }, { csrf: null })).status, 403);
    assert.equal((await roles(app.appId))[invitee.email], undefined);
    const accepted = await browser.post('/portal/accept-invitation', { token });
    assert.equal(accepted.status, 303);
    assert.equal(accepted.location, `/portal/apps/${app.appId}`);
    assert.equal((await roles(app.appId))[invitee.email], 'collaborator');
    const used = await browser.get(link.path);
    assert.equal(used.status, 404);
    assert.match(used.text, /does not work/);
    assert.equal((await browser.get('/portal/accept-invitation?token=nonsense')).status, 404);
  });
});

describe('a password link over HTTP', () => {
  it('sets the password once, starts a session, and ends the ones before', async () => {
    const created = await server.tessera.developers.create('linked@example.com', null, OPERATOR);
    const path = created.link!.path;
    const browser = new PortalBrowser(server.baseUrl);
    const form = await browser.get(path);
    assert.equal(form.status, 200);
    assert.equal(form.headers.get('referrer-policy'), 'no-referrer');
    assert.match(form.text, /linked@example\.com/);
    const token = new URL(path, 'http://x').searchParams.get('token')!;

    assert.equal((await browser.post('/portal/set-password', { token, password: NEW_PASSWORD, repeat: NEW_PASSWORD }, { csrf: null })).status, 403);
    const differ = await browser.post('/portal/set-password', { token, password: NEW_PASSWORD, repeat: `${NEW_PASSWORD}!` });
    assert.equal(differ.status, 400);
    assert.match(differ.text, /not the same/);
    const short = await browser.post('/portal/set-password', { token, password: 'short', repeat: 'short' });
    assert.equal(short.status, 400);
    assert.match(short.text, /12 to 128 characters/);
    assert.ok(!short.text.includes('value="short"'), 'a password is never put back in the form');

    const set = await browser.post('/portal/set-password', { token, password: NEW_PASSWORD, repeat: NEW_PASSWORD });
    assert.equal(set.status, 303);
    assert.equal(set.location, '/portal/');
    const apps = await browser.get('/portal/');
    assert.equal(apps.status, 200, 'signed in');
    assert.match(apps.text, /linked@example\.com/);
    assert.equal((await browser.get(path)).status, 404, 'the link works once');
    await signedInBrowser(server.baseUrl, 'linked@example.com', NEW_PASSWORD);
  });
});

describe('the account page over HTTP', () => {
  it('changes the password with the current one and the form token; other sessions end, this one goes on', async () => {
    await createDeveloper(server, 'changer@example.com');
    const elsewhere = await signedInBrowser(server.baseUrl, 'changer@example.com', PASSWORD);
    const browser = await signedInBrowser(server.baseUrl, 'changer@example.com', PASSWORD);
    const account = await browser.get('/portal/account');
    assert.equal(account.status, 200);
    const fields = { current: PASSWORD, password: NEW_PASSWORD, repeat: NEW_PASSWORD };
    assert.equal((await browser.post('/portal/account/password', fields, { csrf: null })).status, 403);
    assert.equal((await elsewhere.get('/portal/')).status, 200, 'nothing changed');
    const wrong = await browser.post('/portal/account/password', { ...fields, current: 'not the current password' });
    assert.equal(wrong.status, 400);
    assert.match(wrong.text, /current password is wrong/);

    const changed = await browser.post('/portal/account/password', fields);
    assert.equal(changed.status, 303);
    assert.equal(changed.location, '/portal/account?changed=password');
    assert.equal((await browser.get('/portal/account?changed=password')).status, 200, 'this browser stays signed in');
    const ended = await elsewhere.get('/portal/');
    assert.equal(ended.status, 303, 'the other session ended');
    assert.match(ended.location ?? '', /^\/portal\/sign-in/);
    await signedInBrowser(server.baseUrl, 'changer@example.com', NEW_PASSWORD);
  });
});

describe('sign-up', () => {
  it('does not exist with PORTAL_SIGNUP=invite (the default), and the sign-in page does not link to it', async () => {
    const browser = new PortalBrowser(server.baseUrl);
    assert.equal((await browser.get('/portal/sign-up')).status, 404);
    assert.equal((await browser.post('/portal/sign-up', { email: 'x@example.com', password: PASSWORD, repeat: PASSWORD })).status, 404);
    assert.ok(!(await browser.get('/portal/sign-in')).text.includes('/portal/sign-up'));
  });

  it('with PORTAL_SIGNUP=open: makes an account and signs it in; a taken address is told; every attempt counts against the address', async () => {
    const open = await startSignUpServer({ failuresPerAddress: 4 });
    try {
      const browser = new PortalBrowser(open.baseUrl);
      assert.match((await browser.get('/portal/sign-in')).text, /href="\/portal\/sign-up"/);
      await browser.get('/portal/sign-up');
      assert.equal((await browser.post('/portal/sign-up', { email: 'fresh@example.com', password: PASSWORD, repeat: PASSWORD }, { csrf: null })).status, 403);
      const made = await browser.post('/portal/sign-up', { email: 'Fresh@example.com', password: PASSWORD, repeat: PASSWORD });
      assert.equal(made.status, 303);
      assert.match((await browser.get('/portal/')).text, /fresh@example\.com/);

      const other = new PortalBrowser(open.baseUrl);
      await other.get('/portal/sign-up');
      const taken = await other.post('/portal/sign-up', { email: 'fresh@example.com', password: 'another long password', repeat: 'another long password' });
      assert.equal(taken.status, 409);
      assert.match(taken.text, /account with this email address already/);
      assert.match(taken.text, /value="fresh@example.com"/);
      const limited = await other.post('/portal/sign-up', { email: 'third@example.com', password: PASSWORD, repeat: PASSWORD });
      assert.equal(limited.status, 303, 'the third attempt from this address');
      const fourth = await other.post('/portal/sign-up', { email: 'fourth@example.com', password: PASSWORD, repeat: PASSWORD });
      assert.equal(fourth.status, 303, 'the fourth');
      const over = await other.post('/portal/sign-up', { email: 'fifth@example.com', password: PASSWORD, repeat: PASSWORD });
      assert.equal(over.status, 429);
      assert.ok(over.headers.get('retry-after'));
      assert.equal((await open.tessera.developers.list()).length, 3, 'fresh, third and fourth');
    } finally {
      await open.close();
    }
  });
});
