import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { OPERATOR } from '../../src/request-context.js';
import { browserForSuite } from '../helpers/browser.js';
import { adminFields, appOn, requestToken } from '../helpers/http.js';
import { follow, PASSWORD, screenshots, signIn } from '../helpers/portal.js';
import { portalClient, signInOverHttp, type PortalClient } from '../helpers/portal-http.js';
import { scrape } from '../helpers/prometheus.js';
import { serverForSuite, startServer, type TestServer } from '../helpers/server.js';
import { freePort } from '../helpers/process.js';
import { startSilentServer, startSmtpServer, type ReceivedMail, type TestSmtpServer } from '../helpers/smtp.js';
import { forSuite } from '../helpers/suite.js';

// Mail through a real SMTP server (aiosmtpd, started here), through the real server on the store of
// TEST_STORE: sign-up's confirmation, "Forgot your password?", invitations and alerts, each link
// followed; and a mail server that is down or hangs, which no request waits for.

// The server's mail goes to the SMTP server started first: its URL is set once it runs.
const mail = { smtpUrl: '' };
const smtp: TestSmtpServer = forSuite(startSmtpServer, async (started) => (mail.smtpUrl = started.url));
const server: TestServer = serverForSuite({ portalSignup: 'open', metrics: true, mail });
const browser = browserForSuite();

const to = (address: string) => (mail: ReceivedMail) => mail.to === address;
const linkIn = (mail: ReceivedMail, path: string): string => {
  const link = mail.links.find((each) => new URL(each).pathname === path);
  assert.ok(link !== undefined, `a link to ${path} in ${mail.text}`);
  return link;
};
const pathOf = (link: string) => {
  const url = new URL(link);
  return `${url.pathname}${url.search}`;
};

async function postForm(client: PortalClient, path: string, fields: Record<string, string>, from = path) {
  const page = await client.page(from);
  return client.post(path, { _csrf: page.csrf, ...fields });
}

describe('mail through the SMTP server', () => {
  it('sign-up mails a link that confirms the address; until then each page asks for it', async () => {
    const client = portalClient(server);
    const signedUp = await postForm(client, '/portal/sign-up', { email: 'Newcomer@Example.com', password: PASSWORD, repeat: PASSWORD });
    assert.equal(signedUp.status, 303, signedUp.text.slice(0, 500));
    assert.match((await client.page('/portal/')).text, /data-confirm-email/);

    const mail = await smtp.waitFor(to('newcomer@example.com'));
    assert.equal(mail.subject, 'Confirm your email address for Tessera');
    const link = linkIn(mail, '/portal/confirm-email');
    assert.ok(link.startsWith(`${server.baseUrl}/`), link);
    const confirming = await client.page(pathOf(link));
    assert.match(confirming.text, /newcomer@example\.com/);
    assert.equal(
      (await server.tessera.developers.find('newcomer@example.com')).emailConfirmedAt,
      null,
      'opening the link confirms nothing',
    );
    const token = new URL(link).searchParams.get('token')!;
    const confirmed = await client.post('/portal/confirm-email', { _csrf: confirming.csrf, token });
    assert.equal(confirmed.status, 200);
    assert.match(confirmed.text, /Address confirmed/);
    assert.notEqual((await server.tessera.developers.find('newcomer@example.com')).emailConfirmedAt, null);
    assert.doesNotMatch((await client.page('/portal/')).text, /data-confirm-email/);
    assert.equal((await client.get(`/portal/confirm-email?token=${token.slice(0, -2)}xx`)).status, 404, 'a forged token');
  });

  it('"Forgot your password?" answers the same for an unknown address; the known one gets a link that sets a new password in Chromium', async () => {
    await server.tessera.developers.create('rita@example.com', PASSWORD, OPERATOR);
    const client = portalClient(server);
    const unknown = await postForm(client, '/portal/forgot-password', { email: 'nobody@example.com' });
    const known = await postForm(client, '/portal/forgot-password', { email: 'rita@example.com' });
    assert.equal(unknown.status, 200);
    assert.equal(known.status, 200);
    const withoutAddress = (text: string) => text.replace(/(nobody|rita)@example\.com/g, 'ADDRESS').replace(/value="[^"]+"/g, '');
    assert.equal(withoutAddress(unknown.text), withoutAddress(known.text));

    const mail = await smtp.waitFor(to('rita@example.com'));
    assert.equal(mail.subject, 'Set a new password for Tessera');
    assert.ok(!smtp.received().some(to('nobody@example.com')), 'no mail for an address without an account');

    const page = await browser.newPage();
    try {
      await page.goto(`${server.baseUrl}/portal/sign-in`);
      await follow(page, () => page.getByRole('link', { name: 'Forgot your password?' }).click());
      await screenshots(page, 'forgot-password');
      await page.goto(linkIn(mail, '/portal/set-password'));
      await page.getByLabel('New password').fill('a brand new passphrase');
      await page.getByLabel('Repeat the password').fill('a brand new passphrase');
      await follow(page, () => page.getByRole('button', { name: 'Set password and sign in' }).click());
      assert.equal(new URL(page.url()).pathname, '/portal/');
      await follow(page, () => page.getByRole('button', { name: 'Sign out' }).click());
      await signIn(page, server, 'rita@example.com', 'a brand new passphrase');
      assert.equal(new URL(page.url()).pathname, '/portal/');
    } finally {
      await page.close();
    }
  });

  it('an invitation is mailed too, and its link opens the invitation', async () => {
    const owner = await server.tessera.developers.create('olga@example.com', PASSWORD, OPERATOR);
    const app = await server.tessera.ownedApps.create('Invited app', owner.developer.email, OPERATOR);
    const client = await signInOverHttp(server, 'olga@example.com');
    const invited = await postForm(
      client,
      `/portal/apps/${app.appId}/people/invitations`,
      { email: 'ivan@example.com' },
      `/portal/apps/${app.appId}/people`,
    );
    assert.equal(invited.status, 200);
    assert.match(invited.text, /mailed to that address/);
    const mail = await smtp.waitFor(to('ivan@example.com'));
    assert.equal(mail.subject, 'Invitation to the app Invited app on Tessera');
    assert.match(mail.text, /olga@example\.com invites you/);
    await server.tessera.developers.create('ivan@example.com', PASSWORD, OPERATOR);
    const opened = await (await signInOverHttp(server, 'ivan@example.com')).get(pathOf(linkIn(mail, '/portal/accept-invitation')));
    assert.equal(opened.status, 200);
    assert.match(opened.text, /Invited app/);
  });

  it('alerts go to the members once an hour for each kind, not to one who turned them off, nor to whoever made the change', async () => {
    const { tessera } = server;
    const [owner, colleague, quiet] = await Promise.all(
      ['ada@example.com', 'bob@example.com', 'cy@example.com'].map((email) => tessera.developers.create(email, PASSWORD, OPERATOR)),
    );
    const created = appOn(server, await tessera.ownedApps.create('Alerting app', owner!.developer.email, OPERATOR));
    for (const member of [colleague!, quiet!]) {
      const invitation = await tessera.members.invite(created.appId, member.developer.email, OPERATOR);
      const record = await tessera.developers.find(member.developer.email);
      await tessera.members.acceptInvitation(new URL(invitation.url!).searchParams.get('token')!, record, {
        clientAddress: null,
        by: { kind: 'developer', developerId: record.id },
      });
    }
    const cy = await signInOverHttp(server, 'cy@example.com');
    const off = await postForm(cy, `/portal/apps/${created.appId}/alerts`, { alerts: 'off' }, `/portal/apps/${created.appId}`);
    assert.equal(off.status, 303);
    assert.match((await cy.page(`/portal/apps/${created.appId}`)).text, /Turn alerts on/);

    const expose = async () => {
      const refused = await requestToken(created, adminFields(created), { origin: 'https://page.example' });
      assert.equal(refused.status, 400);
      await tessera.events.flush();
      await tessera.mail!.sender.run();
    };
    await expose();
    await expose();
    const exposure = (mail: ReceivedMail) => mail.subject === '[Alerting app] ClientSecret sent from a browser';
    const [toAda, toBob] = await Promise.all([
      smtp.waitFor((m) => exposure(m) && to('ada@example.com')(m)),
      smtp.waitFor((m) => exposure(m) && to('bob@example.com')(m)),
    ]);
    assert.match(toAda.text, /origin https:\/\/page\.example/);
    const bob = await signInOverHttp(server, 'bob@example.com');
    assert.equal((await bob.get(pathOf(linkIn(toBob, `/portal/apps/${created.appId}`)))).status, 200, 'the link shows the app');

    await tessera.apps.rotateSecret(
      created.appId,
      {},
      { clientAddress: null, by: { kind: 'developer', developerId: owner!.developer.id } },
    );
    await tessera.events.flush();
    await tessera.mail!.sender.run();
    const rotation = await smtp.waitFor((m) => m.subject === '[Alerting app] ClientSecret rotated');
    assert.equal(rotation.to, 'bob@example.com');
    assert.match(rotation.text, /by another member/);
    assert.equal((await bob.get(pathOf(linkIn(rotation, new URL(rotation.links[0]!).pathname)))).status, 200, 'the event page');

    await sleep(200);
    const alerts = smtp.received().filter((mail) => mail.subject.startsWith('[Alerting app]'));
    assert.deepEqual(alerts.map((mail) => `${mail.to} ${mail.subject}`).sort(), [
      'ada@example.com [Alerting app] ClientSecret sent from a browser',
      'bob@example.com [Alerting app] ClientSecret rotated',
      'bob@example.com [Alerting app] ClientSecret sent from a browser',
    ]);
  });

  it('alerts of a burst of refusals, a credential refused for its address and a credential made by another member link to their pages', async () => {
    const { tessera } = server;
    const [owner, colleague] = await Promise.all(
      ['dee@example.com', 'eve@example.com'].map((email) => tessera.developers.create(email, PASSWORD, OPERATOR)),
    );
    const created = appOn(server, await tessera.ownedApps.create('Watched app', owner!.developer.email, OPERATOR));
    const invitation = await tessera.members.invite(created.appId, colleague!.developer.email, OPERATOR);
    const eve = await tessera.developers.find(colleague!.developer.email);
    await tessera.members.acceptInvitation(new URL(invitation.url!).searchParams.get('token')!, eve, {
      clientAddress: null,
      by: { kind: 'developer', developerId: eve.id },
    });
    // The burst as the watch records it (its counting is tests/http/webhooks.test.ts's).
    await tessera.store.transaction(async (tx) =>
      tx.events.append([
        {
          type: 'app.refusal_burst',
          appId: created.appId,
          at: Date.now(),
          principal: null,
          clientAddress: null,
          details: { minute: new Date().toISOString(), refused: 14, throttled: 2 },
        },
      ]),
    );
    const byOwner = { clientAddress: null, by: { kind: 'developer' as const, developerId: owner!.developer.id } };
    const credential = await tessera.credentials.create(
      created.appId,
      { name: 'Nightly job', scopes: ['events:read'], allowFrom: ['203.0.113.0/24'] },
      byOwner,
    );
    const refused = await requestToken(created, {
      grant_type: 'client_credentials',
      client_id: credential.clientId,
      client_secret: credential.clientSecret,
    });
    assert.equal(refused.status, 401, refused.text);
    await tessera.events.flush();
    await tessera.mail!.sender.run();
    const [burst, refusal, made] = await Promise.all([
      smtp.waitFor((m) => m.subject === '[Watched app] Burst of refused requests' && to('dee@example.com')(m)),
      smtp.waitFor((m) => m.subject === '[Watched app] Credential refused' && to('eve@example.com')(m)),
      smtp.waitFor((m) => m.subject === '[Watched app] Credential created'),
    ]);
    assert.match(burst.text, /14 token requests of the app Watched app were refused for their keys and 2 throttled/);
    assert.match(refusal.text, /Nightly job.*for the address it came from/s);
    assert.equal(made.to, 'eve@example.com', 'not the owner, who made it');
    const dee = await signInOverHttp(server, 'dee@example.com');
    assert.equal((await dee.get(pathOf(linkIn(burst, `/portal/apps/${created.appId}/events`)))).status, 200);
    const eveClient = await signInOverHttp(server, 'eve@example.com');
    assert.equal((await eveClient.get(pathOf(linkIn(refusal, `/portal/apps/${created.appId}/credentials`)))).status, 200);
  });

  it('counts the mail sent on /metrics', async () => {
    const scraped = await scrape(server.metricsUrl!);
    for (const kind of ['confirmation', 'password_reset', 'invitation', 'alert']) {
      assert.ok(scraped.value('tessera_mail_sent_total', { kind }) >= 1, kind);
    }
    assert.equal(scraped.value('tessera_mail_failed_total', { kind: 'alert' }), 0);
  });
});

describe('a mail server that is down or hangs', () => {
  for (const [what, start] of [
    ['down', async () => ({ url: `smtp://127.0.0.1:${await freePort()}`, close: async () => {} })],
    ['hanging', startSilentServer],
  ] as const) {
    it(`(${what}) slows no request; the mail is tried again, then given up and counted`, async () => {
      const smtpServer = await start();
      const failing = await startServer({
        metrics: true,
        mail: {
          smtpUrl: smtpServer.url,
          sender: { retryDelaysMs: [20, 20], pollIntervalMs: 50 },
          timeouts: { connectionMs: 300, greetingMs: 300, socketMs: 300 },
        },
      });
      try {
        await failing.tessera.developers.create('dora@example.com', PASSWORD, OPERATOR);
        const client = portalClient(failing);
        const started = performance.now();
        const asked = await postForm(client, '/portal/forgot-password', { email: 'dora@example.com' });
        assert.equal(asked.status, 200);
        assert.ok(performance.now() - started < 1000, `answered in ${Math.round(performance.now() - started)} ms`);
        const until = Date.now() + 10_000;
        let failed = 0;
        while (Date.now() < until) {
          failed = (await scrape(failing.metricsUrl!)).value('tessera_mail_failed_total', { kind: 'password_reset' });
          if (failed === 3 && (await failing.tessera.store.mail.countPending()) === 0) break;
          await sleep(50);
        }
        assert.equal(failed, 3, 'three attempts, then given up');
        assert.equal(await failing.tessera.store.mail.countPending(), 0);
        assert.equal((await scrape(failing.metricsUrl!)).value('tessera_mail_sent_total', { kind: 'password_reset' }), 0);
      } finally {
        await failing.close();
        await smtpServer.close();
      }
    });
  }
});
