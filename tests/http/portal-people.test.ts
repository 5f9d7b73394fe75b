import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_SIGN_IN_LIMITS } from '../../src/developers/sign-in-limits.js';
import { OPERATOR } from '../../src/request-context.js';
import { addCollaborator, createDeveloper, createSharedApp, linkTokenOf, PASSWORD } from '../helpers/portal.js';
import { adminFields, appUrlOf, bearer, requestToken, whoami } from '../helpers/http.js';
import { portalClient, signInOverHttp } from '../helpers/portal-http.js';
import { NO_LIMITS, serverForSuite, startServer } from '../helpers/server.js';

// The portal's people and account forms over plain HTTP, on both stores: who may post what, the
// form token on every form, the one-time links, and sign-up as the operator configured it.

const server = serverForSuite();

const NEW_PASSWORD = 'a brand new password, long';

/** An app owned by a new developer, with a collaborator; both signed in. */
async function appWithPeople(name: string) {
  const owner = await createDeveloper(server, `${name}-owner@example.com`);
  const collaborator = await createDeveloper(server, `${name}-collaborator@example.com`);
  const app = await createSharedApp(server, name, owner.email, collaborator.email);
  return {
    app,
    owner: { ...owner, client: await signInOverHttp(server, owner.email) },
    collaborator: { ...collaborator, client: await signInOverHttp(server, collaborator.email) },
  };
}

async function roles(appId: string): Promise<Record<string, string>> {
  return Object.fromEntries((await server.tessera.members.membersOf(appId, OPERATOR)).map((member) => [member.email, member.role]));
}

async function invitations(appId: string): Promise<number> {
  return (await server.testStore.store.developers.links.invitationsOf(appId, Date.now())).length;
}

describe('the people page over HTTP', () => {
  it('lets the owner invite: the link is shown whole, once; the form without its token changes nothing (403)', async () => {
    const { app, owner } = await appWithPeople('invite');
    const { csrf } = await owner.client.page(`/portal/apps/${app.appId}/people`);
    const refused = await owner.client.post(`/portal/apps/${app.appId}/people/invitations`, { email: 'new@example.com' });
    assert.equal(refused.status, 403);
    const forged = await owner.client.post(`/portal/apps/${app.appId}/people/invitations`, { email: 'new@example.com', _csrf: 'forged' });
    assert.equal(forged.status, 403);
    assert.equal(await invitations(app.appId), 0);

    const invited = await owner.client.post(`/portal/apps/${app.appId}/people/invitations`, { email: ' New@Example.com ', _csrf: csrf });
    assert.equal(invited.status, 200, invited.text);
    assert.match(invited.text, new RegExp(`${server.baseUrl}/portal/accept-invitation\\?token=[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+`));
    assert.match(invited.text, /new@example\.com/);
    assert.equal(invited.headers.get('cache-control'), 'no-store');
    assert.equal(await invitations(app.appId), 1);
    const again = await owner.client.get(`/portal/apps/${app.appId}/people`);
    assert.ok(!again.text.includes('accept-invitation?token='), 'the link is shown once');

    const bad = await owner.client.post(`/portal/apps/${app.appId}/people/invitations`, { email: 'not an address', _csrf: csrf });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /role="alert"/);
    assert.match(bad.text, /value="not an address"/);
  });

  it('lets the owner remove a collaborator, not without the form token', async () => {
    const { app, owner, collaborator } = await appWithPeople('remove');
    const confirm = await owner.client.page(`/portal/apps/${app.appId}/people/${collaborator.id}/remove`);
    assert.match(confirm.text, /Remove the collaborator/);
    const refused = await owner.client.post(`/portal/apps/${app.appId}/people/${collaborator.id}/remove`, {});
    assert.equal(refused.status, 403);
    assert.equal((await roles(app.appId))[collaborator.email], 'collaborator');
    const removed = await owner.client.post(`/portal/apps/${app.appId}/people/${collaborator.id}/remove`, { _csrf: confirm.csrf });
    assert.equal(removed.status, 303);
    assert.equal(removed.location, `/portal/apps/${app.appId}/people`);
    assert.equal((await roles(app.appId))[collaborator.email], undefined);
    assert.equal((await collaborator.client.get(`/portal/apps/${app.appId}`)).status, 404);
    // The owner is not removed this way: 404, as for no member at all.
    assert.equal((await owner.client.post(`/portal/apps/${app.appId}/people/${owner.id}/remove`, { _csrf: confirm.csrf })).status, 404);
    assert.equal((await owner.client.post(`/portal/apps/${app.appId}/people/not-a-uuid/remove`, { _csrf: confirm.csrf })).status, 404);
  });

  it('revokes with a removed collaborator the credentials they made, after saying so; nothing else', async () => {
    const { app, owner, collaborator } = await appWithPeople('credentials');
    const appUrl = appUrlOf(server.baseUrl, app.appId);
    const byCollaborator = { clientAddress: null, by: { kind: 'developer' as const, developerId: collaborator.id } };
    const theirs = await server.tessera.credentials.create(app.appId, { name: 'Their job', scopes: ['events:read'] }, byCollaborator);
    const operators = await server.tessera.credentials.create(app.appId, { name: 'Operator job', scopes: ['events:read'] }, OPERATOR);
    const tokenOf = async (credential: { clientId: string; clientSecret: string }) =>
      (
        await requestToken(
          { app, appUrl },
          adminFields({ app, appUrl }, { client_id: credential.clientId, client_secret: credential.clientSecret }),
        )
      ).body.access_token as string;
    const theirToken = await tokenOf(theirs);
    const operatorsToken = await tokenOf(operators);

    const confirm = await owner.client.page(`/portal/apps/${app.appId}/people/${collaborator.id}/remove`);
    assert.match(confirm.text, /data-revoked-with-member="1">The credentials they made for this app are revoked with theirs/);
    assert.match(confirm.text, new RegExp(`<strong>Their job</strong> \\(<code>${theirs.clientId}</code>\\)`));
    const removed = await owner.client.post(`/portal/apps/${app.appId}/people/${collaborator.id}/remove`, { _csrf: confirm.csrf });
    assert.equal(removed.status, 303);
    assert.deepEqual(
      (await server.tessera.credentials.list(app.appId, OPERATOR)).map((credential) => credential.name),
      ['Operator job'],
    );
    assert.equal((await whoami(appUrl, bearer(theirToken))).status, 401);
    assert.equal((await whoami(appUrl, bearer(operatorsToken))).status, 200);
    await server.tessera.events.flush();
    const revoked = (await server.tessera.events.list(app.appId, { type: 'credential.revoked', limit: 10 })).events;
    assert.deepEqual(
      revoked.map((event) => [event.details.name, event.details.madeByDeveloperId]),
      [['Their job', collaborator.id]],
    );
  });

  it('shows a collaborator the people but no form; its posts are 403; it may leave', async () => {
    const { app, owner, collaborator } = await appWithPeople('collaborate');
    const people = await collaborator.client.page(`/portal/apps/${app.appId}/people`);
    assert.ok(people.text.includes(owner.email) && people.text.includes(collaborator.email));
    assert.ok(!people.text.includes('/people/invitations'), 'no invite form');
    assert.ok(!people.text.includes('Remove'), 'no remove link');
    assert.equal(
      (await collaborator.client.post(`/portal/apps/${app.appId}/people/invitations`, { email: 'friend@example.com', _csrf: people.csrf }))
        .status,
      403,
    );
    assert.equal(await invitations(app.appId), 0);
    const third = await createDeveloper(server, 'collaborate-third@example.com');
    await addCollaborator(server, app.appId, third.email);
    assert.equal((await collaborator.client.get(`/portal/apps/${app.appId}/people/${third.id}/remove`)).status, 403);
    assert.equal(
      (await collaborator.client.post(`/portal/apps/${app.appId}/people/${third.id}/remove`, { _csrf: people.csrf })).status,
      403,
    );
    assert.equal((await roles(app.appId))[third.email], 'collaborator');

    const left = await collaborator.client.post(`/portal/apps/${app.appId}/people/${collaborator.id}/remove`, { _csrf: people.csrf });
    assert.equal(left.status, 303);
    assert.equal(left.location, '/portal/');
    assert.equal((await roles(app.appId))[collaborator.email], undefined);
  });

  it('lists the invitations not yet accepted to the owner only, who withdraws one: its link stops working', async () => {
    const { app, owner, collaborator } = await appWithPeople('pending');
    const { csrf } = await owner.client.page(`/portal/apps/${app.appId}/people`);
    for (const email of ['first@example.com', 'second@example.com']) {
      assert.equal((await owner.client.post(`/portal/apps/${app.appId}/people/invitations`, { email, _csrf: csrf })).status, 200);
    }
    const second = await createDeveloper(server, 'second@example.com');
    const [latest, earliest] = await server.tessera.members.pendingInvitations(app.appId, OPERATOR);
    assert.deepEqual([latest!.email, earliest!.email].sort(), ['first@example.com', 'second@example.com']);

    const listed = await owner.client.page(`/portal/apps/${app.appId}/people`);
    assert.match(listed.text, /Invited, not yet accepted/);
    assert.ok(listed.text.includes('first@example.com') && listed.text.includes('second@example.com'));
    const seenByCollaborator = await collaborator.client.page(`/portal/apps/${app.appId}/people`);
    assert.ok(!seenByCollaborator.text.includes('first@example.com'), 'a collaborator sees no invitation');

    const withdraw = (id: string) => `/portal/apps/${app.appId}/people/invitations/${id}/withdraw`;
    const firstId = (await server.tessera.members.pendingInvitations(app.appId, OPERATOR)).find(
      (one) => one.email === 'first@example.com',
    )!.id;
    assert.equal((await owner.client.post(withdraw(firstId), {})).status, 403, 'no form token');
    assert.equal((await collaborator.client.post(withdraw(firstId), { _csrf: seenByCollaborator.csrf })).status, 403);
    const stranger = await signInOverHttp(server, (await createDeveloper(server, 'pending-stranger@example.com')).email);
    assert.equal((await stranger.post(withdraw(firstId), { _csrf: (await stranger.page('/portal/')).csrf })).status, 404);
    assert.equal(await invitations(app.appId), 2);

    const withdrawn = await owner.client.post(withdraw(firstId), { _csrf: listed.csrf });
    assert.equal(withdrawn.status, 303);
    assert.equal(withdrawn.location, `/portal/apps/${app.appId}/people?done=withdrawn`);
    const after = await owner.client.page(withdrawn.location);
    assert.match(after.text, /The invitation is withdrawn/);
    assert.ok(!after.text.includes('first@example.com'));
    assert.equal((await owner.client.post(withdraw(firstId), { _csrf: listed.csrf })).status, 404, 'once');
    assert.equal((await owner.client.post(withdraw('no-such-invitation'), { _csrf: listed.csrf })).status, 404);
    const events = await server.tessera.events.list(app.appId, { type: 'app.invitation_withdrawn', limit: 10 });
    assert.equal(events.events.length, 1);
    assert.equal(events.events[0]!.details.email, 'first@example.com');
    assert.equal(events.events[0]!.details.byDeveloperId, owner.id);

    // Accepted, an invitation is no longer listed.
    await addCollaborator(server, app.appId, second.email);
    assert.equal(await invitations(app.appId), 0);
    assert.ok(!(await owner.client.page(`/portal/apps/${app.appId}/people`)).text.includes('Invited, not yet accepted'));
  });

  it('gives another developer 404 for every people page and form of an app not theirs, and changes nothing', async () => {
    const { app, collaborator } = await appWithPeople('private');
    const stranger = await createDeveloper(server, 'stranger@example.com');
    const client = await signInOverHttp(server, stranger.email);
    const { csrf } = await client.page('/portal/');
    for (const path of [`/portal/apps/${app.appId}/people`, `/portal/apps/${app.appId}/people/${collaborator.id}/remove`]) {
      assert.equal((await client.get(path)).status, 404, path);
    }
    assert.equal((await client.post(`/portal/apps/${app.appId}/people/invitations`, { email: stranger.email, _csrf: csrf })).status, 404);
    assert.equal((await client.post(`/portal/apps/${app.appId}/people/${collaborator.id}/remove`, { _csrf: csrf })).status, 404);
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
    const token = linkTokenOf(link.path);

    const visitor = portalClient(server);
    const first = await visitor.get(link.path);
    assert.equal(first.status, 303);
    assert.equal(first.location, `/portal/sign-in?next=${encodeURIComponent(link.path)}`);
    assert.equal(first.headers.get('referrer-policy'), 'no-referrer');

    const other = await signInOverHttp(server, 'accept-other@example.com');
    const wrong = await other.get(link.path);
    assert.equal(wrong.status, 403);
    assert.match(wrong.text, /for another address/);
    const { csrf: othersCsrf } = await other.page('/portal/');
    assert.equal((await other.post('/portal/accept-invitation', { token, _csrf: othersCsrf })).status, 403);

    const client = await signInOverHttp(server, invitee.email);
    const shown = await client.page(link.path);
    assert.match(shown.text, /Invitation to Accepted/);
    assert.equal((await client.post('/portal/accept-invitation', { token })).status, 403);
    assert.equal((await roles(app.appId))[invitee.email], undefined);
    const accepted = await client.post('/portal/accept-invitation', { token, _csrf: shown.csrf });
    assert.equal(accepted.status, 303);
    assert.equal(accepted.location, `/portal/apps/${app.appId}`);
    assert.equal((await roles(app.appId))[invitee.email], 'collaborator');
    const used = await client.get(link.path);
    assert.equal(used.status, 404);
    assert.match(used.text, /does not work/);
    assert.equal((await client.get('/portal/accept-invitation?token=nonsense')).status, 404);
  });
});

describe('a password link over HTTP', () => {
  it('sets the password once, starts a session, and ends the ones before', async () => {
    const created = await server.tessera.developers.create('linked@example.com', null, OPERATOR);
    const path = created.link!.path;
    const client = portalClient(server);
    const form = await client.page(path);
    assert.equal(form.headers.get('referrer-policy'), 'no-referrer');
    assert.match(form.text, /linked@example\.com/);
    const token = linkTokenOf(path);

    assert.equal((await client.post('/portal/set-password', { token, password: NEW_PASSWORD, repeat: NEW_PASSWORD })).status, 403);
    const differ = await client.post('/portal/set-password', {
      _csrf: form.csrf,
      token,
      password: NEW_PASSWORD,
      repeat: `${NEW_PASSWORD}!`,
    });
    assert.equal(differ.status, 400);
    assert.match(differ.text, /not the same/);
    const short = await client.post('/portal/set-password', { _csrf: form.csrf, token, password: 'short', repeat: 'short' });
    assert.equal(short.status, 400);
    assert.match(short.text, /12 to 128 characters/);
    assert.ok(!short.text.includes('value="short"'), 'a password is never put back in the form');

    const set = await client.post('/portal/set-password', { _csrf: form.csrf, token, password: NEW_PASSWORD, repeat: NEW_PASSWORD });
    assert.equal(set.status, 303);
    assert.equal(set.location, '/portal/');
    const apps = await client.get('/portal/');
    assert.equal(apps.status, 200, 'signed in');
    assert.match(apps.text, /linked@example\.com/);
    assert.equal((await client.get(path)).status, 404, 'the link works once');
    await signInOverHttp(server, 'linked@example.com', NEW_PASSWORD);
  });
});

describe('the account page over HTTP', () => {
  it('ends a password link issued before a password change: its holder cannot set the password after it', async () => {
    await createDeveloper(server, 'reset-then-change@example.com');
    const reset = await server.tessera.developers.issueResetLink('reset-then-change@example.com', OPERATOR);
    const holder = portalClient(server);
    const form = await holder.page(reset.path);

    const owner = await signInOverHttp(server, 'reset-then-change@example.com');
    const account = await owner.page('/portal/account');
    const changed = await owner.post('/portal/account/password', {
      _csrf: account.csrf,
      current: PASSWORD,
      password: NEW_PASSWORD,
      repeat: NEW_PASSWORD,
    });
    assert.equal(changed.status, 303);

    assert.equal((await holder.get(reset.path)).status, 404, 'the link page says it does not work');
    const used = await holder.post('/portal/set-password', {
      _csrf: form.csrf,
      token: linkTokenOf(reset.path),
      password: 'the holder\u2019s password',
      repeat: 'the holder\u2019s password',
    });
    assert.equal(used.status, 404);
    assert.match(used.text, /does not work/);
    assert.equal(holder.cookies.has('tessera-session'), false, 'not signed in');
    await signInOverHttp(server, 'reset-then-change@example.com', NEW_PASSWORD);
  });

  it('changes the password with the current one and the form token; other sessions end, this one goes on', async () => {
    await createDeveloper(server, 'changer@example.com');
    const elsewhere = await signInOverHttp(server, 'changer@example.com');
    const client = await signInOverHttp(server, 'changer@example.com');
    const account = await client.page('/portal/account');
    const fields = { current: PASSWORD, password: NEW_PASSWORD, repeat: NEW_PASSWORD };
    assert.equal((await client.post('/portal/account/password', fields)).status, 403);
    assert.equal((await elsewhere.get('/portal/')).status, 200, 'nothing changed');
    const wrong = await client.post('/portal/account/password', { ...fields, _csrf: account.csrf, current: 'not the current password' });
    assert.equal(wrong.status, 400);
    assert.match(wrong.text, /current password is wrong/);

    const changed = await client.post('/portal/account/password', { ...fields, _csrf: account.csrf });
    assert.equal(changed.status, 303);
    assert.equal(changed.location, '/portal/account?changed=password');
    assert.equal((await client.get('/portal/account?changed=password')).status, 200, 'this browser stays signed in');
    const ended = await elsewhere.get('/portal/');
    assert.equal(ended.status, 303, 'the other session ended');
    assert.match(ended.location ?? '', /^\/portal\/sign-in/);
    await signInOverHttp(server, 'changer@example.com', NEW_PASSWORD);
  });
});

describe('sign-up', () => {
  it('does not exist with PORTAL_SIGNUP=invite (the default), and the sign-in page does not link to it', async () => {
    const visitor = portalClient(server);
    const signIn = await visitor.page('/portal/sign-in');
    assert.ok(!signIn.text.includes('/portal/sign-up'));
    assert.equal((await visitor.get('/portal/sign-up')).status, 404);
    assert.equal(
      (await visitor.post('/portal/sign-up', { _csrf: signIn.csrf, email: 'x@example.com', password: PASSWORD, repeat: PASSWORD })).status,
      404,
    );
  });

  it('with PORTAL_SIGNUP=open: makes an account and signs it in; a taken address is told; every attempt counts against the address', async () => {
    const open = await startServer({
      portalSignup: 'open',
      rateLimits: { ...NO_LIMITS, enabled: true, tokenRequestsPerAddressPerMinute: 1000 },
      signInLimits: { ...DEFAULT_SIGN_IN_LIMITS, failuresPerAddress: { points: 4, duration: 3600 } },
    });
    try {
      const visitor = portalClient(open);
      assert.match((await visitor.get('/portal/sign-in')).text, /href="\/portal\/sign-up"/);
      const { csrf } = await visitor.page('/portal/sign-up');
      assert.equal(
        (await visitor.post('/portal/sign-up', { email: 'fresh@example.com', password: PASSWORD, repeat: PASSWORD })).status,
        403,
      );
      const made = await visitor.post('/portal/sign-up', { _csrf: csrf, email: 'Fresh@example.com', password: PASSWORD, repeat: PASSWORD });
      assert.equal(made.status, 303);
      assert.match((await visitor.get('/portal/')).text, /fresh@example\.com/);

      const other = portalClient(open);
      const { csrf: othersCsrf } = await other.page('/portal/sign-up');
      const taken = await other.post('/portal/sign-up', {
        _csrf: othersCsrf,
        email: 'fresh@example.com',
        password: 'another long password',
        repeat: 'another long password',
      });
      assert.equal(taken.status, 409);
      assert.match(taken.text, /account with this email address already/);
      assert.match(taken.text, /value="fresh@example.com"/);
      const limited = await other.post('/portal/sign-up', {
        _csrf: othersCsrf,
        email: 'third@example.com',
        password: PASSWORD,
        repeat: PASSWORD,
      });
      assert.equal(limited.status, 303, 'the third attempt from this address');
      const fourth = await other.post('/portal/sign-up', {
        _csrf: othersCsrf,
        email: 'fourth@example.com',
        password: PASSWORD,
        repeat: PASSWORD,
      });
      assert.equal(fourth.status, 303, 'the fourth');
      const over = await other.post('/portal/sign-up', {
        _csrf: othersCsrf,
        email: 'fifth@example.com',
        password: PASSWORD,
        repeat: PASSWORD,
      });
      assert.equal(over.status, 429);
      assert.ok(over.headers.get('retry-after'));
      assert.equal((await open.tessera.developers.list()).length, 3, 'fresh, third and fourth');
    } finally {
      await open.close();
    }
  });
});
