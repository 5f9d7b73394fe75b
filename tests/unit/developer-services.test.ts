import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import type { DeveloperRecord } from '../../src/developers/developer.js';
import { SESSION_IDLE_MS, SESSION_MAX_MS } from '../../src/developers/session.js';
import type { SignInLimitSettings } from '../../src/developers/sign-in-limits.js';
import { anonymousRequest, OPERATOR, type RequestContext } from '../../src/request-context.js';
import { createTessera, type Tessera } from '../../src/tessera.js';
import { codeOf } from '../helpers/assert.js';
import { FakeClock } from '../helpers/clock.js';
import { PASSWORD } from '../helpers/portal.js';
import { NO_LIMITS } from '../helpers/server.js';
import { createSqliteTestStore, type TestStore } from '../helpers/store.js';

// The developer services (accounts, sessions, memberships), called directly over a real SQLite store
// with a fake clock, and the sign-in limits counting in memory as a server's do.

const LIMITS_ON = {
  ...NO_LIMITS,
  enabled: true,
  tokenRequestsPerAddressPerMinute: 1e6,
  adminFailuresPerAddressPerMinute: 1e6,
  adminFailuresPerAppPerMinute: 1e6,
};

const from = (address: string): RequestContext => anonymousRequest(address);
const asDeveloper = (developer: DeveloperRecord, address = '192.0.2.1'): RequestContext => ({
  clientAddress: address,
  by: { kind: 'developer', developerId: developer.id },
});

/** The token of a link as printed: what follows `token=`. */
const tokenOf = (link: { path: string }) => decodeURIComponent(link.path.slice(link.path.indexOf('token=') + 'token='.length));

interface Fixture {
  testStore: TestStore;
  clock: FakeClock;
  tessera: Tessera;
}

async function open(options: { signInLimits?: SignInLimitSettings; limits?: typeof LIMITS_ON } = {}): Promise<Fixture> {
  const testStore = await createSqliteTestStore();
  const clock = new FakeClock(Date.now());
  const tessera = createTessera({
    store: testStore.store,
    clock,
    rateLimits: options.limits ?? NO_LIMITS,
    ...(options.signInLimits === undefined ? {} : { signInLimits: options.signInLimits }),
    publicUrl: 'https://portal.example.com',
  });
  return { testStore, clock, tessera };
}

async function close({ tessera, testStore }: Fixture): Promise<void> {
  await tessera.close();
  await testStore.dispose();
}

/** Every event written for the developer and the apps, as JSON: what must never hold a secret. */
async function everythingRecorded(tessera: Tessera, developerIds: string[], appIds: string[] = []): Promise<string> {
  const developerEvents = await Promise.all(developerIds.map((id) => tessera.store.developers.accounts.listEvents(id, 1000)));
  await tessera.events.flush();
  const appEvents = await Promise.all(appIds.map((appId) => tessera.store.events.list({ appId, limit: 1000 })));
  return JSON.stringify([developerEvents, appEvents]);
}

describe('developer accounts and sessions, over a real store', () => {
  let fixture: Fixture;
  let tessera: Tessera;
  let clock: FakeClock;

  before(async () => {
    fixture = await open();
    ({ tessera, clock } = fixture);
  });
  after(() => close(fixture));
  beforeEach(() => {
    clock.time = Date.now();
  });

  it('creates an account without a password, whose one-time link sets it once; then the developer signs in', async () => {
    const created = await tessera.developers.create('  New.Person@Example.com ', null, OPERATOR);
    assert.equal(created.developer.email, 'new.person@example.com');
    assert.equal(created.developer.hasPassword, false);
    const link = created.link!;
    assert.equal(link.url, `https://portal.example.com${link.path}`);
    assert.match(link.path, /^\/portal\/set-password\?token=[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    assert.equal(
      await codeOf(
        tessera.developerSessions.signIn(
          { email: 'new.person@example.com', password: PASSWORD, clientAddress: '192.0.2.1' },
          from('192.0.2.1'),
        ),
      ),
      'INVALID_CREDENTIALS',
    );

    const token = tokenOf(link);
    assert.equal((await tessera.developers.passwordLinkOwner(token)).id, created.developer.id);
    assert.equal(await codeOf(tessera.developers.setPasswordWithLink(token, 'too short', from('192.0.2.1'))), 'invalid_request');
    const developer = await tessera.developers.setPasswordWithLink(token, PASSWORD, from('192.0.2.1'));
    assert.equal(await codeOf(tessera.developers.setPasswordWithLink(token, `${PASSWORD}!`, from('192.0.2.1'))), 'INVALID_LINK');
    assert.equal(await codeOf(tessera.developers.passwordLinkOwner(token)), 'INVALID_LINK');
    const started = await tessera.developerSessions.start(developer, from('192.0.2.1'));
    assert.equal((await tessera.developerSessions.current(started.token))?.developer.id, developer.id);

    const signedIn = await tessera.developerSessions.signIn(
      { email: ' NEW.person@example.com', password: PASSWORD, clientAddress: '192.0.2.1' },
      from('192.0.2.1'),
    );
    assert.equal(signedIn.developer.id, developer.id);
    const recorded = await everythingRecorded(tessera, [developer.id]);
    const events = await tessera.store.developers.accounts.listEvents(developer.id, 10);
    assert.deepEqual(events.map((event) => [event.type, event.actor]).reverse(), [
      ['developer.created', 'operator'],
      ['developer.link_issued', 'operator'],
      ['developer.password_set', 'developer'],
      ['developer.signed_in', 'developer'],
      ['developer.signed_in', 'developer'],
    ]);
    for (const secret of [
      token,
      token.split('.')[1]!,
      PASSWORD,
      signedIn.token,
      signedIn.token.split('.')[1]!,
      started.token.split('.')[1]!,
    ]) {
      assert.ok(!recorded.includes(secret), `an event holds a secret: ${secret.slice(0, 8)}…`);
    }
    assert.ok(!recorded.includes('$argon2id$'), 'an event holds a password hash');
  });

  it('creates an account with a password that signs in at once; refuses a taken email, a bad email or a short password', async () => {
    const created = await tessera.developers.create('with.password@example.com', PASSWORD, OPERATOR);
    assert.equal(created.link, null);
    assert.equal(created.developer.hasPassword, true);
    await tessera.developerSessions.signIn(
      { email: 'with.password@example.com', password: PASSWORD, clientAddress: null },
      from('192.0.2.1'),
    );
    assert.equal(await codeOf(tessera.developers.create('WITH.password@example.com', null, OPERATOR)), 'CONFLICT');
    assert.equal(await codeOf(tessera.developers.create('not an email', null, OPERATOR)), 'invalid_request');
    assert.equal(await codeOf(tessera.developers.create('short@example.com', 'eleven char', OPERATOR)), 'invalid_request');
    assert.equal(await codeOf(tessera.developers.find('short@example.com')), 'DEVELOPER_NOT_FOUND');
  });

  it('answers every refused sign-in the same, after the same kind of work', async () => {
    await tessera.developers.create('known@example.com', PASSWORD, OPERATOR);
    await tessera.developers.create('no-password-yet@example.com', null, OPERATOR);
    await tessera.developers.create('disabled@example.com', PASSWORD, OPERATOR);
    await tessera.developers.disable('disabled@example.com', OPERATOR);
    const attempt = async (email: string, password: string) => {
      const started = process.hrtime.bigint();
      let message = 'resolved';
      try {
        await tessera.developerSessions.signIn({ email, password, clientAddress: '192.0.2.9' }, from('192.0.2.9'));
      } catch (error) {
        message = `${(error as { code: string }).code}: ${(error as Error).message}`;
      }
      return { message, ms: Number(process.hrtime.bigint() - started) / 1e6 };
    };
    const cases = [
      ['known@example.com', 'a wrong password here'],
      ['unknown@example.com', PASSWORD],
      ['no-password-yet@example.com', PASSWORD],
      ['disabled@example.com', PASSWORD],
      ['not-an-email', PASSWORD],
    ] as const;
    const timings: number[][] = cases.map(() => []);
    for (let round = 0; round < 5; round++) {
      for (const [index, [email, password]] of cases.entries()) {
        const { message, ms } = await attempt(email, password);
        assert.equal(message, 'INVALID_CREDENTIALS: The email address or the password is wrong.', email);
        timings[index]!.push(ms);
      }
    }
    // Each refusal checked an Argon2id hash: none is answered in a small fraction of a wrong
    // password's time. The quickest of five rounds each: a busy machine (CI runs other Node.js lines
    // beside this) slows some rounds down, never speeds one up, so the minimum is the work itself;
    // still, all five rounds of one case may fall in a busy stretch (seen: 28 ms against 9 ms), so
    // the bound is a tenth: a refusal that skipped the hash takes well under a millisecond.
    const quickest = (values: number[]) => Math.min(...values);
    const wrongPassword = quickest(timings[0]!);
    for (const [index, [email]] of cases.entries()) {
      assert.ok(
        quickest(timings[index]!) > wrongPassword / 10,
        `${email}: ${quickest(timings[index]!).toFixed(1)} ms against ${wrongPassword.toFixed(1)} ms for a wrong password`,
      );
    }
  });

  it('keeps a session 30 minutes after the last request, 12 hours at most; sign-out ends it', async () => {
    await tessera.developers.create('sessions@example.com', PASSWORD, OPERATOR);
    const signIn = () =>
      tessera.developerSessions.signIn(
        { email: 'sessions@example.com', password: PASSWORD, clientAddress: '192.0.2.1' },
        from('192.0.2.1'),
      );
    const idle = await signIn();
    clock.advance(SESSION_IDLE_MS - 1);
    assert.ok(await tessera.developerSessions.current(idle.token), 'still working just before the idle end');
    clock.advance(SESSION_IDLE_MS - 1);
    assert.ok(await tessera.developerSessions.current(idle.token), 'the last request pushed the idle end on');
    clock.advance(SESSION_IDLE_MS);
    assert.equal(await tessera.developerSessions.current(idle.token), undefined, 'idle for 30 minutes');

    const busy = await signIn();
    const started = clock.now();
    while (clock.now() - started < SESSION_MAX_MS - 20 * 60_000) {
      clock.advance(20 * 60_000);
      assert.ok(await tessera.developerSessions.current(busy.token), `working after ${(clock.now() - started) / 3_600_000} h`);
    }
    clock.time = started + SESSION_MAX_MS;
    assert.equal(await tessera.developerSessions.current(busy.token), undefined, 'never longer than 12 hours');

    const ended = await signIn();
    const [id] = ended.token.split('.') as [string];
    const forged = `${id}.${(await signIn()).token.split('.')[1]}`;
    assert.equal(await tessera.developerSessions.current(forged), undefined, 'the id with another secret');
    assert.equal(await tessera.developerSessions.current('garbage'), undefined);
    assert.equal(await tessera.developerSessions.signOut(ended.token, from('192.0.2.1')), true);
    assert.equal(await tessera.developerSessions.current(ended.token), undefined);
    assert.equal(await tessera.developerSessions.signOut(ended.token, from('192.0.2.1')), false);
  });

  it('ends every session of a developer on a password change and when it is disabled', async () => {
    const { developer } = await tessera.developers.create('ending@example.com', PASSWORD, OPERATOR);
    const signIn = (password = PASSWORD) =>
      tessera.developerSessions.signIn({ email: 'ending@example.com', password, clientAddress: '192.0.2.1' }, from('192.0.2.1'));
    const [first, second] = [await signIn(), await signIn()];
    const context = asDeveloper(await tessera.developers.find('ending@example.com'));
    assert.equal(
      await codeOf(tessera.developers.changePassword(developer.id, 'not the password', 'another long password', context)),
      'INVALID_CREDENTIALS',
    );
    assert.equal(await codeOf(tessera.developers.changePassword(developer.id, PASSWORD, 'short', context)), 'invalid_request');
    assert.ok(await tessera.developerSessions.current(first.token), 'a refused change ends nothing');
    const changed = await tessera.developers.changePassword(developer.id, PASSWORD, 'another long password', context);
    for (const session of [first, second]) assert.equal(await tessera.developerSessions.current(session.token), undefined);
    const after = await tessera.developerSessions.start(changed, context);
    assert.ok(await tessera.developerSessions.current(after.token));
    assert.equal(await codeOf(signIn()), 'INVALID_CREDENTIALS');
    const third = await signIn('another long password');

    const disabled = await tessera.developers.disable('ending@example.com', OPERATOR);
    assert.deepEqual([disabled.changed, disabled.sessionsEnded], [true, 2]);
    assert.equal(await tessera.developerSessions.current(third.token), undefined);
    assert.equal(await codeOf(signIn('another long password')), 'INVALID_CREDENTIALS');
    assert.equal(await codeOf(tessera.developerSessions.start(changed, context)), 'INVALID_CREDENTIALS');
    assert.equal((await tessera.developers.disable('ending@example.com', OPERATOR)).changed, false);
  });

  it('issues reset links that replace the earlier ones and expire after a day; none for a disabled developer', async () => {
    const created = await tessera.developers.create('reset@example.com', null, OPERATOR);
    const first = await tessera.developers.issueResetLink('RESET@example.com', OPERATOR);
    assert.equal(first.email, 'reset@example.com');
    assert.equal(first.purpose, 'reset_password');
    assert.equal(
      await codeOf(tessera.developers.passwordLinkOwner(tokenOf(created.link!))),
      'INVALID_LINK',
      'the set-password link is replaced',
    );
    const second = await tessera.developers.issueResetLink('reset@example.com', OPERATOR);
    assert.equal(await codeOf(tessera.developers.setPasswordWithLink(tokenOf(first), PASSWORD, from('192.0.2.1'))), 'INVALID_LINK');
    clock.advance(24 * 3_600_000);
    assert.equal(
      await codeOf(tessera.developers.setPasswordWithLink(tokenOf(second), PASSWORD, from('192.0.2.1'))),
      'INVALID_LINK',
      'expired',
    );
    clock.advance(-60_000);
    await tessera.developers.setPasswordWithLink(tokenOf(second), PASSWORD, from('192.0.2.1'));

    await tessera.developers.disable('reset@example.com', OPERATOR);
    assert.equal(await codeOf(tessera.developers.issueResetLink('reset@example.com', OPERATOR)), 'invalid_request');
    assert.equal(await codeOf(tessera.developers.issueResetLink('nobody@example.com', OPERATOR)), 'DEVELOPER_NOT_FOUND');
  });
});

describe('sign-in limits', () => {
  // Small limits over a short window, counted in memory as by a server without Redis.
  const WINDOW_S = 2;
  const settings: SignInLimitSettings = {
    failuresPerAccountAndClient: { points: 3, duration: WINDOW_S },
    failuresPerAddress: { points: 6, duration: WINDOW_S },
    failuresPerAccount: { points: 5, duration: WINDOW_S },
  };
  let fixture: Fixture;
  let tessera: Tessera;

  beforeEach(async () => {
    fixture = await open({ signInLimits: settings, limits: LIMITS_ON });
    tessera = fixture.tessera;
    await tessera.developers.create('target@example.com', PASSWORD, OPERATOR);
  });
  afterEach(() => close(fixture));

  const signIn = (password: string, clientAddress: string, deviceToken?: string, email = 'target@example.com') =>
    codeOf(tessera.developerSessions.signIn({ email, password, clientAddress, deviceToken }, from(clientAddress)));

  it('holds one client after its failures on the account, even with the right password, until the window is over; others still get in', async () => {
    for (let i = 0; i < 3; i++) assert.equal(await signIn('wrong password!', '198.51.100.1'), 'INVALID_CREDENTIALS');
    // Refused before any hashing: quicker than a sign-in that checks the password, measured alike
    // (a fixed bound in milliseconds fails on a loaded machine).
    let started = performance.now();
    assert.equal(await signIn(PASSWORD, '198.51.100.1'), 'TOO_MANY_REQUESTS');
    const refusedMs = performance.now() - started;
    started = performance.now();
    assert.equal(await signIn(PASSWORD, '198.51.100.2'), 'resolved');
    const checkedMs = performance.now() - started;
    assert.ok(refusedMs < checkedMs, `refused in ${refusedMs} ms, a checked password took ${checkedMs} ms`);
    await sleep(WINDOW_S * 1000 + 100);
    assert.equal(await signIn(PASSWORD, '198.51.100.1'), 'resolved', 'no lock-out for good');
  });

  it('holds the account for every new client after failures from many, but not a browser that signed in before', async () => {
    const before = await tessera.developerSessions.signIn(
      { email: 'target@example.com', password: PASSWORD, clientAddress: '198.51.100.9' },
      from('198.51.100.9'),
    );
    const deviceToken = before.deviceToken!;
    for (const address of ['198.51.100.1', '198.51.100.2']) {
      for (let i = 0; i < 2; i++) assert.equal(await signIn('wrong password!', address), 'INVALID_CREDENTIALS');
    }
    assert.equal(await signIn('wrong password!', '198.51.100.3'), 'INVALID_CREDENTIALS');
    assert.equal(await signIn(PASSWORD, '198.51.100.4'), 'TOO_MANY_REQUESTS');
    const [id, nonce, mac] = deviceToken.split('.') as [string, string, string];
    for (const forged of [
      `${id}.${nonce}.${'A'.repeat(mac.length)}`,
      `${id}.${'B'.repeat(nonce.length)}.${mac}`,
      'not a device token',
      `${randomUUID()}.${nonce}.${mac}`,
    ]) {
      assert.equal(await signIn(PASSWORD, '198.51.100.4', forged), 'TOO_MANY_REQUESTS', forged);
    }
    assert.equal(await signIn(PASSWORD, '198.51.100.4', deviceToken), 'resolved');
    assert.equal(
      await signIn(PASSWORD, '198.51.100.4', undefined, 'other@example.com'),
      'INVALID_CREDENTIALS',
      'other accounts are not held',
    );
    assert.equal(
      await signIn(PASSWORD, '198.51.100.4', deviceToken, 'other@example.com'),
      'INVALID_CREDENTIALS',
      'a device of one account is nothing to another',
    );

    // A new password: the browser's device token no longer counts.
    const link = await tessera.developers.issueResetLink('target@example.com', OPERATOR);
    await tessera.developers.setPasswordWithLink(
      new URL(link.path, 'http://portal').searchParams.get('token')!,
      'another password, long enough',
      from('198.51.100.9'),
    );
    assert.equal(await signIn('another password, long enough', '198.51.100.5', deviceToken), 'TOO_MANY_REQUESTS');
  });

  it('does not let one client use up the account\u2019s limit, even in a burst', async () => {
    const burst = await Promise.all(Array.from({ length: 8 }, () => signIn('wrong password!', '198.51.100.1')));
    assert.ok(
      burst.every((code) => code === 'INVALID_CREDENTIALS' || code === 'TOO_MANY_REQUESTS'),
      burst.join(),
    );
    assert.equal(await signIn(PASSWORD, '198.51.100.2'), 'resolved');
  });

  it('holds one address that tries many accounts', async () => {
    for (let i = 0; i < 6; i++)
      assert.equal(await signIn('wrong password!', '2001:db8::1', undefined, `someone-${i}@example.com`), 'INVALID_CREDENTIALS');
    assert.equal(await signIn(PASSWORD, '2001:db8::2'), 'TOO_MANY_REQUESTS', 'the same /64');
    assert.equal(await signIn(PASSWORD, '2001:db8:1::1'), 'resolved');
  });

  it('counts in Redis when it is configured, so that the limits hold across instances', async () => {
    const shared = {
      ...LIMITS_ON,
      redisUrl: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      redisKeyPrefix: `tessera-test-sign-in-${process.pid}-${Date.now()}`,
    };
    const [a, b] = [0, 1].map(() => createTessera({ store: fixture.testStore.store, rateLimits: shared, signInLimits: settings })) as [
      Tessera,
      Tessera,
    ];
    try {
      await Promise.all([a.limits.ready(), b.limits.ready()]);
      const on = (instance: Tessera, password: string, address: string) =>
        codeOf(instance.developerSessions.signIn({ email: 'target@example.com', password, clientAddress: address }, from(address)));
      for (let i = 0; i < 3; i++) assert.equal(await on(a, 'wrong password!', '198.51.100.1'), 'INVALID_CREDENTIALS');
      assert.equal(await on(b, PASSWORD, '198.51.100.1'), 'TOO_MANY_REQUESTS', 'the other instance knows');
      assert.equal(await on(b, PASSWORD, '198.51.100.2'), 'resolved');
    } finally {
      await Promise.all([a.limits.close(), b.limits.close()]);
    }
  });

  it('lets a developer held by the limits in through a reset link from the operator', async () => {
    for (let i = 0; i < 3; i++) await signIn('wrong password!', '198.51.100.1');
    assert.equal(await signIn(PASSWORD, '198.51.100.1'), 'TOO_MANY_REQUESTS');
    const link = await tessera.developers.issueResetLink('target@example.com', OPERATOR);
    const developer = await tessera.developers.setPasswordWithLink(tokenOf(link), 'a brand new password', from('198.51.100.1'));
    const session = await tessera.developerSessions.start(developer, from('198.51.100.1'));
    assert.ok(await tessera.developerSessions.current(session.token));
  });
});

describe('app memberships', () => {
  let fixture: Fixture;
  let tessera: Tessera;
  let owner: DeveloperRecord;
  let collaborator: DeveloperRecord;
  let stranger: DeveloperRecord;
  let appId: string;

  before(async () => {
    fixture = await open();
    tessera = fixture.tessera;
    for (const email of ['owner@example.com', 'collaborator@example.com', 'stranger@example.com'])
      await tessera.developers.create(email, PASSWORD, OPERATOR);
    [owner, collaborator, stranger] = (await Promise.all(
      ['owner@example.com', 'collaborator@example.com', 'stranger@example.com'].map((email) => tessera.developers.find(email)),
    )) as [DeveloperRecord, DeveloperRecord, DeveloperRecord];
    appId = (await tessera.apps.create('Shared')).appId;
  });
  after(() => close(fixture));

  it('gives an app to its owner (operator), who invites a collaborator with a link only that email can use once', async () => {
    const set = await tessera.members.setOwner(appId, 'OWNER@example.com', OPERATOR);
    assert.deepEqual([set.owner.id, set.previousOwner, set.changed], [owner.id, null, true]);
    assert.equal(await codeOf(tessera.members.invite(appId, 'collaborator@example.com', asDeveloper(stranger))), 'APP_NOT_FOUND');
    const invitation = await tessera.members.invite(appId, ' Collaborator@Example.com', asDeveloper(owner));
    assert.match(invitation.url!, /^https:\/\/portal\.example\.com\/portal\/accept-invitation\?token=/);
    const token = tokenOf(invitation);
    assert.equal(await codeOf(tessera.members.acceptInvitation(token, stranger, asDeveloper(stranger))), 'FORBIDDEN');
    assert.deepEqual(await tessera.members.acceptInvitation(token, collaborator, asDeveloper(collaborator)), {
      appId,
      role: 'collaborator',
      added: true,
    });
    assert.equal(await codeOf(tessera.members.acceptInvitation(token, collaborator, asDeveloper(collaborator))), 'INVALID_LINK');
    assert.equal(
      await codeOf(tessera.developers.setPasswordWithLink(token, PASSWORD, from('192.0.2.1'))),
      'INVALID_LINK',
      'not a password link',
    );
    assert.deepEqual(
      (await tessera.members.membersOf(appId, OPERATOR)).map((member) => [member.email, member.role]),
      [
        ['owner@example.com', 'owner'],
        ['collaborator@example.com', 'collaborator'],
      ],
    );

    await tessera.events.flush();
    const events = await tessera.store.events.list({ appId, limit: 10 });
    assert.deepEqual(events.map((event) => [event.type, event.principal, event.details.byDeveloperId ?? null]).reverse(), [
      ['app.owner_changed', 'operator', null],
      ['app.collaborator_invited', 'developer', owner.id],
      ['app.collaborator_added', 'developer', collaborator.id],
    ]);
    const recorded = await everythingRecorded(tessera, [owner.id, collaborator.id], [appId]);
    for (const secret of [token, token.split('.')[1]!]) assert.ok(!recorded.includes(secret), 'an event holds the invitation\u2019s token');
  });

  it('lets the owner do everything, a collaborator all but rotate, delete and manage collaborators, and no one else anything', async () => {
    assert.equal(await tessera.members.authorize(appId, owner.id, 'rotate_secret'), 'owner');
    assert.equal(await tessera.members.authorize(appId, collaborator.id, 'change_configuration'), 'collaborator');
    for (const action of ['rotate_secret', 'delete_app', 'manage_collaborators'] as const) {
      assert.equal(await codeOf(tessera.members.authorize(appId, collaborator.id, action)), 'FORBIDDEN', action);
    }
    assert.equal(await codeOf(tessera.members.authorize(appId, stranger.id, 'view_app')), 'APP_NOT_FOUND');
    assert.equal(await codeOf(tessera.members.authorize('no-such-app', owner.id, 'view_app')), 'APP_NOT_FOUND');
    assert.equal(await codeOf(tessera.members.invite(appId, 'x@example.com', asDeveloper(collaborator))), 'FORBIDDEN');
    assert.equal(await codeOf(tessera.members.invite(appId, 'x@example.com', OPERATOR)), 'resolved');
  });

  it('lets a collaborator leave, and the owner be replaced only by a transfer', async () => {
    assert.equal(await codeOf(tessera.members.removeCollaborator(appId, owner.id, asDeveloper(owner))), 'invalid_request');
    assert.equal(await codeOf(tessera.members.removeCollaborator(appId, owner.id, asDeveloper(collaborator))), 'FORBIDDEN');
    await tessera.members.removeCollaborator(appId, collaborator.id, asDeveloper(collaborator));
    assert.equal(await codeOf(tessera.members.authorize(appId, collaborator.id, 'view_app')), 'APP_NOT_FOUND');
    const transfer = await tessera.members.setOwner(appId, 'stranger@example.com', OPERATOR);
    assert.deepEqual(transfer.previousOwner, { id: owner.id, email: owner.email });
    assert.equal(await codeOf(tessera.members.authorize(appId, owner.id, 'view_app')), 'APP_NOT_FOUND');
    assert.equal(await codeOf(tessera.members.setOwner(appId, 'nobody@example.com', OPERATOR)), 'DEVELOPER_NOT_FOUND');
    assert.equal(await codeOf(tessera.members.setOwner('no-such-app', 'owner@example.com', OPERATOR)), 'APP_NOT_FOUND');
    await tessera.developers.disable('owner@example.com', OPERATOR);
    assert.equal(await codeOf(tessera.members.setOwner(appId, 'owner@example.com', OPERATOR)), 'invalid_request');
  });
});
