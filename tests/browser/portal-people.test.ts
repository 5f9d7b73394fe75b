import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { OPERATOR } from '../../src/request-context.js';
import { browserForSuite } from '../helpers/browser.js';
import { addCollaborator, createDeveloper, follow, PASSWORD, screenshots, signIn } from '../helpers/portal.js';
import { serverForSuite, startServer } from '../helpers/server.js';

// People and accounts in Chromium: an owner invites a collaborator who signs in and accepts; a
// password set through the operator's link; a password changed; sign-up, open or not.

const browser = browserForSuite();
const server = serverForSuite();

const NEW_PASSWORD = 'a brand new password, long';

function path(page: Page): string {
  return new URL(page.url()).pathname;
}

describe('people in the portal', () => {
  it('an owner invites a developer, who signs in, accepts, sees the app, and cannot invite (no form, 403 when posted)', async () => {
    const owner = await createDeveloper(server, 'olivia@example.com');
    const invitee = await createDeveloper(server, 'ben@example.com');
    const app = await server.tessera.ownedApps.create('Weather', owner.email, OPERATOR);
    const kim = await createDeveloper(server, 'kim@example.com');
    await addCollaborator(server, app.appId, kim.email);

    const ownerPage = await browser.newPage();
    await signIn(ownerPage, server, owner.email);
    await ownerPage.goto(`${server.baseUrl}/portal/apps/${app.appId}`);
    await follow(ownerPage, () => ownerPage.getByRole('link', { name: 'People' }).click());
    assert.equal(path(ownerPage), `/portal/apps/${app.appId}/people`);
    await ownerPage.getByLabel('Email').fill(invitee.email);
    await follow(ownerPage, () => ownerPage.getByRole('button', { name: 'Invite' }).click());
    const link = (await ownerPage.locator('[data-invitation-link]').textContent())!;
    assert.match(link, new RegExp(`^${server.baseUrl}/portal/accept-invitation\\?token=`));
    await screenshots(ownerPage, 'people');
    await ownerPage.close();

    const page = await browser.newPage();
    await page.goto(link);
    assert.equal(path(page), '/portal/sign-in', 'not signed in: sign in first');
    await page.getByLabel('Email').fill(invitee.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await follow(page, () => page.getByRole('button', { name: 'Sign in' }).click());
    assert.equal(path(page), '/portal/accept-invitation', 'back to the invitation');
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Invitation to Weather');
    await screenshots(page, 'accept-invitation');
    await follow(page, () => page.getByRole('button', { name: 'Accept invitation' }).click());
    assert.equal(path(page), `/portal/apps/${app.appId}`);
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Weather');
    assert.equal(await page.locator('[data-key=appKey]').textContent(), app.appKey);

    await follow(page, () => page.getByRole('link', { name: 'People' }).click());
    const rows = await page.locator('table.people tbody tr').allTextContents();
    assert.equal(rows.length, 3);
    assert.match(rows[0]!, /olivia@example\.com\s*owner/);
    assert.match(rows[1]!, /kim@example\.com\s*collaborator/);
    assert.match(rows[2]!, /ben@example\.com \(you\)\s*collaborator/);
    assert.equal(await page.getByRole('button', { name: 'Invite' }).count(), 0, 'no invite form for a collaborator');
    assert.equal(await page.getByRole('link', { name: /^Remove/ }).count(), 0, 'no remove link either');

    // The form posted all the same, with a good form token: 403, and nothing made.
    const csrf = await page.locator('input[name=_csrf]').first().inputValue();
    const posted = await page.request.post(`${server.baseUrl}/portal/apps/${app.appId}/people/invitations`, {
      form: { _csrf: csrf, email: 'friend@example.com' },
      maxRedirects: 0,
    });
    assert.equal(posted.status(), 403);
    assert.equal((await server.testStore.store.developers.links.invitationsOf(app.appId, Date.now())).length, 0);
    await page.close();
  });

  it('the owner removes a collaborator after confirming', async () => {
    const owner = await createDeveloper(server, 'rosa@example.com');
    const collaborator = await createDeveloper(server, 'sam@example.com');
    const app = await server.tessera.ownedApps.create('Maps', owner.email, OPERATOR);
    await addCollaborator(server, app.appId, collaborator.email);

    const page = await browser.newPage();
    await signIn(page, server, owner.email);
    await page.goto(`${server.baseUrl}/portal/apps/${app.appId}/people`);
    await follow(page, () => page.getByRole('link', { name: 'Remove sam@example.com' }).click());
    assert.match((await page.getByRole('heading', { level: 2 }).textContent())!, /Remove sam@example\.com\?/);
    await follow(page, () => page.getByRole('button', { name: 'Remove the collaborator' }).click());
    assert.equal(path(page), `/portal/apps/${app.appId}/people`);
    assert.equal(await page.locator('table.people tbody tr').count(), 1);
    await page.close();
  });
});

describe('passwords in the portal', () => {
  it('sets a password through the link of `developers create` without one, and arrives signed in', async () => {
    const created = await server.tessera.developers.create('nora@example.com', null, OPERATOR);
    const page = await browser.newPage();
    await page.goto(`${server.baseUrl}${created.link!.path}`);
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Set your password');
    await screenshots(page, 'set-password');
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Repeat the password').fill('something else, also long');
    await follow(page, () => page.getByRole('button', { name: 'Set password and sign in' }).click());
    assert.match((await page.getByRole('alert').textContent())!, /not the same/);
    await page.getByLabel('New password', { exact: true }).fill('too short');
    await page.getByLabel('Repeat the password').fill('too short');
    await follow(page, () => page.getByRole('button', { name: 'Set password and sign in' }).click());
    assert.match((await page.getByRole('alert').textContent())!, /12 to 128 characters/);
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Repeat the password').fill(NEW_PASSWORD);
    await follow(page, () => page.getByRole('button', { name: 'Set password and sign in' }).click());
    assert.equal(path(page), '/portal/');
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Your apps');
    assert.equal(await page.locator('.who').textContent(), 'nora@example.com');

    await page.goto(`${server.baseUrl}${created.link!.path}`);
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'This link does not work');
    await page.close();
  });

  it('changes the password on the account page: this browser stays signed in, the session elsewhere ends', async () => {
    await createDeveloper(server, 'omar@example.com');
    const page = await browser.newPage();
    await signIn(page, server, 'omar@example.com');
    const [before] = (await page.context().cookies(`${server.baseUrl}/portal/`)).filter((cookie) => cookie.name === 'tessera-session');
    assert.ok(before, 'a session cookie');

    await follow(page, () => page.getByRole('link', { name: 'Account' }).click());
    assert.equal(path(page), '/portal/account');
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Your account');
    await screenshots(page, 'account');
    await page.getByLabel('Current password').fill(PASSWORD);
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Repeat the new password').fill(NEW_PASSWORD);
    await follow(page, () => page.getByRole('button', { name: 'Change password' }).click());
    assert.match((await page.getByRole('status').textContent())!, /password is changed/);

    // The session of before, as another browser would present it: ended.
    const old = await fetch(`${server.baseUrl}/portal/`, { headers: { cookie: `tessera-session=${before.value}` }, redirect: 'manual' });
    assert.equal(old.status, 303);
    assert.match(old.headers.get('location')!, /^\/portal\/sign-in/);
    await page.goto(`${server.baseUrl}/portal/`);
    assert.equal(path(page), '/portal/', 'this browser is still signed in');

    await follow(page, () => page.getByRole('button', { name: 'Sign out' }).click());
    await signIn(page, server, 'omar@example.com', NEW_PASSWORD);
    assert.equal(path(page), '/portal/');
    await page.close();
  });
});

describe('a reset link and a password change', () => {
  // One Chromium profile holds one set of cookies: the owner and the link's holder take turns.
  it('a reset link issued before the owner changed the password does not work after it', async () => {
    await createDeveloper(server, 'rita@example.com');
    const reset = await server.tessera.developers.issueResetLink('rita@example.com', OPERATOR);
    const page = await browser.newPage();
    await page.goto(`${server.baseUrl}${reset.path}`);
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Set your password', 'the link works before');

    await signIn(page, server, 'rita@example.com');
    await page.goto(`${server.baseUrl}/portal/account`);
    await page.getByLabel('Current password').fill(PASSWORD);
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Repeat the new password').fill(NEW_PASSWORD);
    await follow(page, () => page.getByRole('button', { name: 'Change password' }).click());
    assert.match((await page.getByRole('status').textContent())!, /password is changed/);
    await follow(page, () => page.getByRole('button', { name: 'Sign out' }).click());

    await page.goto(`${server.baseUrl}${reset.path}`);
    assert.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'This link does not work');
    assert.equal(await page.getByLabel('New password', { exact: true }).count(), 0, 'no form');
    await signIn(page, server, 'rita@example.com', NEW_PASSWORD);
    assert.equal(path(page), '/portal/');
    await page.close();
  });
});

describe('sign-up in the portal', () => {
  it('is not offered with PORTAL_SIGNUP=invite', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.baseUrl}/portal/sign-in`);
    assert.equal(await page.getByRole('link', { name: 'Sign up' }).count(), 0);
    assert.equal((await page.goto(`${server.baseUrl}/portal/sign-up`))?.status(), 404);
    await page.close();
  });

  it('with PORTAL_SIGNUP=open: linked from the sign-in page, makes an account and signs it in', async () => {
    const open = await startServer({ portalSignup: 'open' });
    try {
      const page = await browser.newPage();
      await page.goto(`${open.baseUrl}/portal/sign-in`);
      await follow(page, () => page.getByRole('link', { name: 'Sign up' }).click());
      assert.equal(path(page), '/portal/sign-up');
      await screenshots(page, 'sign-up');
      await page.getByLabel('Email').fill('Pat@Example.com');
      await page.getByLabel('Password', { exact: true }).fill(NEW_PASSWORD);
      await page.getByLabel('Repeat the password').fill(NEW_PASSWORD);
      await follow(page, () => page.getByRole('button', { name: 'Sign up' }).click());
      assert.equal(path(page), '/portal/');
      assert.equal(await page.locator('.who').textContent(), 'pat@example.com');

      await follow(page, () => page.getByRole('button', { name: 'Sign out' }).click());
      await page.goto(`${open.baseUrl}/portal/sign-up`);
      await page.getByLabel('Email').fill('pat@example.com');
      await page.getByLabel('Password', { exact: true }).fill('yet another long password');
      await page.getByLabel('Repeat the password').fill('yet another long password');
      await follow(page, () => page.getByRole('button', { name: 'Sign up' }).click());
      assert.match((await page.getByRole('alert').textContent())!, /account with this email address already/);
      await page.close();
    } finally {
      await open.close();
    }
  });
});
