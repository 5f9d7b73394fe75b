import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import type { DeveloperRecord } from '../../src/developers/developer.js';
import { isTesseraError, type ErrorCode } from 'tessera-tokens/internal/errors.js';
import { eventCountQuery } from '../../src/events/counts.js';
import { ANONYMOUS_ID, type Principal } from 'tessera-tokens/internal/principal.js';
import { anonymousRequest, OPERATOR, type RequestContext } from '../../src/request-context.js';
import { createTessera, type Tessera } from '../../src/tessera.js';
import { FakeClock } from '../helpers/clock.js';
import { createTestStore, type TestStore } from '../helpers/store.js';

// Who may act on an app, asked of the services themselves rather than of the portal's pages: every
// operation on an app, and every read of one the portal makes, called directly, over a real store,
// by each kind of caller. A refused caller changes nothing and reads nothing, and a developer who is
// no member cannot tell the app from one that does not exist.

const PASSWORD = 'correct horse battery staple';
const ADDRESS = '192.0.2.1';
const LIMITS_OFF = {
  enabled: false,
  tokenRequestsPerAddressPerMinute: 1,
  adminFailuresPerAddressPerMinute: 1,
  adminFailuresPerAppPerMinute: 1,
};

type Outcome = 'resolved' | ErrorCode;

async function outcomeOf(promise: Promise<unknown>): Promise<Outcome> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    if (isTesseraError(error)) return error.code;
    throw error;
  }
}

async function messageOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (isTesseraError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error('resolved');
}

/** An app as each test starts it: an owner, two collaborators, an invitation still open and an admin token. */
interface SharedApp {
  appId: string;
  invitationId: string;
  /** The open invitation's link token. */
  invitationToken: string;
  adminToken: string;
}

const CALLERS = ['operator', 'admin', 'otherAppAdmin', 'anonymous', 'nobody', 'owner', 'collaborator', 'fellow', 'stranger'] as const;
type Caller = (typeof CALLERS)[number];

interface Operation {
  name: string;
  run(tessera: Tessera, app: SharedApp, context: RequestContext): Promise<unknown>;
  /** What each caller gets: `resolved`, or the code of the error that refuses it. */
  expected: Record<Caller, Outcome>;
}

/** The configuration and revoke-all, which an app's admin token may do as well as its members. */
const BY_ADMIN_TOKEN_OR_MEMBER = {
  operator: 'resolved',
  admin: 'resolved',
  otherAppAdmin: 'ADMIN_REQUIRED',
  anonymous: 'ADMIN_REQUIRED',
  nobody: 'ADMIN_REQUIRED',
  owner: 'resolved',
  collaborator: 'resolved',
  fellow: 'resolved',
  stranger: 'APP_NOT_FOUND',
} as const;

/** What only the operator and the app's owner may do: never an admin token, never a collaborator. */
const BY_OWNER = {
  operator: 'resolved',
  admin: 'FORBIDDEN',
  otherAppAdmin: 'FORBIDDEN',
  anonymous: 'FORBIDDEN',
  nobody: 'FORBIDDEN',
  owner: 'resolved',
  collaborator: 'FORBIDDEN',
  fellow: 'FORBIDDEN',
  stranger: 'APP_NOT_FOUND',
} as const;

const OPERATIONS: Operation[] = [
  {
    name: 'configure',
    run: (tessera, { appId }, context) => tessera.apps.configure(appId, { requireAppKey: true }, context),
    expected: BY_ADMIN_TOKEN_OR_MEMBER,
  },
  {
    name: 'revoke all admin tokens',
    run: (tessera, { appId }, context) => tessera.revoker.revokeAll(appId, 'admin', context),
    expected: BY_ADMIN_TOKEN_OR_MEMBER,
  },
  {
    name: 'revoke all tokens',
    run: (tessera, { appId }, context) => tessera.revoker.revokeAll(appId, 'all', context),
    expected: BY_ADMIN_TOKEN_OR_MEMBER,
  },
  {
    name: 'rotate the ClientSecret',
    run: (tessera, { appId }, context) => tessera.apps.rotateSecret(appId, { revokeAdminTokens: true }, context),
    expected: BY_OWNER,
  },
  {
    name: 'delete',
    run: (tessera, { appId }, context) => tessera.apps.delete(appId, context),
    expected: BY_OWNER,
  },
  {
    name: 'invite a collaborator',
    run: (tessera, { appId }, context) => tessera.members.invite(appId, 'newcomer@example.com', context),
    expected: BY_OWNER,
  },
  {
    name: 'withdraw an invitation',
    run: (tessera, { appId, invitationId }, context) => tessera.members.withdrawInvitation(appId, invitationId, context),
    expected: BY_OWNER,
  },
  {
    name: 'transfer the app',
    run: (tessera, { appId }, context) => tessera.members.setOwner(appId, 'stranger@example.com', context),
    expected: BY_OWNER,
  },
  {
    // Handing over scopes: a context that names nobody is never taken for the operator.
    name: 'create a credential',
    run: (tessera, { appId }, context) => tessera.credentials.create(appId, { name: 'Reports', scopes: ['events:read'] }, context),
    expected: BY_ADMIN_TOKEN_OR_MEMBER,
  },
  {
    // The collaborator removed is the one who asks, when it is "collaborator": it leaves.
    name: 'remove the collaborator',
    run: async (tessera, { appId }, context) =>
      tessera.members.removeCollaborator(appId, (await tessera.developers.find('collaborator@example.com')).id, context),
    expected: { ...BY_OWNER, collaborator: 'resolved' },
  },
];

/**
 * The reads of one app that the portal's pages make (and the API's, for an admin token): each caller
 * let in gets what the operator gets.
 */
const READS: Operation[] = [
  {
    name: 'the app and its keys',
    run: (tessera, { appId }, context) => tessera.apps.show(appId, context),
    expected: BY_ADMIN_TOKEN_OR_MEMBER,
  },
  {
    name: 'its members',
    run: (tessera, { appId }, context) => tessera.members.membersOf(appId, context),
    expected: BY_ADMIN_TOKEN_OR_MEMBER,
  },
  {
    name: 'its open invitations',
    run: (tessera, { appId }, context) => tessera.members.pendingInvitations(appId, context),
    expected: BY_OWNER,
  },
  {
    name: 'its events',
    run: (tessera, { appId }, context) => tessera.appEvents.list(appId, { limit: 100 }, context),
    expected: BY_ADMIN_TOKEN_OR_MEMBER,
  },
  {
    name: 'its events after one',
    run: (tessera, { appId }, context) => tessera.appEvents.listAfter(appId, { afterId: 0, limit: 100 }, context),
    expected: BY_ADMIN_TOKEN_OR_MEMBER,
  },
  {
    name: 'one of its events',
    run: (tessera, { appId }, context) => tessera.appEvents.find(appId, 1, context),
    expected: BY_ADMIN_TOKEN_OR_MEMBER,
  },
  {
    name: 'its event counts',
    run: (tessera, { appId }, context) => tessera.appEvents.counts(appId, eventCountQuery({ per: 'hour' }, tessera.clock.now()), context),
    expected: BY_ADMIN_TOKEN_OR_MEMBER,
  },
  {
    name: 'its secret exposures',
    run: (tessera, { appId }, context) => tessera.appEvents.secretExposures(appId, context),
    expected: BY_ADMIN_TOKEN_OR_MEMBER,
  },
];

describe('the services authorize whoever acts on an app, whichever page or route calls them', () => {
  let testStore: TestStore;
  let tessera: Tessera;
  const developers = new Map<string, DeveloperRecord>();
  let otherAppId: string;

  before(async () => {
    testStore = await createTestStore();
    tessera = createTessera({ store: testStore.store, clock: new FakeClock(Date.now()), rateLimits: LIMITS_OFF });
    for (const name of ['owner', 'collaborator', 'fellow', 'stranger']) {
      await tessera.developers.create(`${name}@example.com`, PASSWORD, OPERATOR);
      developers.set(name, await tessera.developers.find(`${name}@example.com`));
    }
    otherAppId = (await tessera.ownedApps.create('The stranger\u2019s', 'stranger@example.com', OPERATOR)).appId;
  });
  after(async () => {
    await tessera.close();
    await testStore.dispose();
  });

  const developer = (name: string): DeveloperRecord => developers.get(name)!;
  const tokenOf = (link: { path: string }) => decodeURIComponent(link.path.slice(link.path.indexOf('token=') + 'token='.length));
  const adminOf = (appId: string): Principal => ({
    appId,
    kind: 'admin',
    id: `admin-of-${appId}`,
    auth: 'bearer',
    expiresAt: null,
    scopes: null,
    clientId: null,
  });

  async function sharedApp(): Promise<SharedApp> {
    const created = await tessera.ownedApps.create('Shared', 'owner@example.com', OPERATOR);
    for (const name of ['collaborator', 'fellow']) {
      const invitation = await tessera.members.invite(created.appId, `${name}@example.com`, OPERATOR);
      await tessera.members.acceptInvitation(tokenOf(invitation), developer(name), OPERATOR);
    }
    const invitation = await tessera.members.invite(created.appId, 'pending@example.com', OPERATOR);
    const [pending] = await tessera.members.pendingInvitations(created.appId, OPERATOR);
    const record = await tessera.appCache.require(created.appId);
    const issued = await tessera.issuer.issue(
      record,
      { credentials: { clientId: created.clientId, clientSecret: created.clientSecret }, expiresAt: null },
      anonymousRequest(ADDRESS),
    );
    return { appId: created.appId, invitationId: pending!.id, invitationToken: tokenOf(invitation), adminToken: issued.accessToken };
  }

  function contextOf(caller: Caller, { appId }: SharedApp): RequestContext {
    switch (caller) {
      case 'operator':
        return OPERATOR;
      case 'admin':
        return { clientAddress: ADDRESS, by: adminOf(appId) };
      case 'otherAppAdmin':
        return { clientAddress: ADDRESS, by: adminOf(otherAppId) };
      case 'anonymous':
        return {
          clientAddress: ADDRESS,
          by: { appId, kind: 'anonymous', id: ANONYMOUS_ID, auth: 'basic', expiresAt: null, scopes: null, clientId: null },
        };
      case 'nobody':
        return anonymousRequest(ADDRESS);
      default:
        return { clientAddress: ADDRESS, by: { kind: 'developer', developerId: developer(caller).id } };
    }
  }

  /** Everything an operation on the app could change: the app's record, its people, its log, whether its admin token works. */
  async function stateOf({ appId, adminToken }: SharedApp) {
    await tessera.events.flush();
    const authenticated = await outcomeOf(
      (async () =>
        tessera.authenticator.authenticate({ appId, authorization: `Bearer ${adminToken}`, path: `/api/apps/${appId}/whoami` }))(),
    );
    return {
      app: await tessera.store.apps.findById(appId),
      members: await tessera.members.membersOf(appId, OPERATOR),
      invitations: await tessera.members.pendingInvitations(appId, OPERATOR),
      events: await tessera.store.events.list({ appId, limit: 1000 }),
      adminToken: authenticated,
      otherApp: await tessera.store.apps.findById(otherAppId),
    };
  }

  for (const operation of OPERATIONS) {
    it(`${operation.name}: lets only those allowed, and a refusal changes nothing`, async () => {
      const outcomes: Partial<Record<Caller, Outcome>> = {};
      const wrongChanges: string[] = [];
      for (const caller of CALLERS) {
        const app = await sharedApp();
        const before = await stateOf(app);
        const outcome = await outcomeOf(operation.run(tessera, app, contextOf(caller, app)));
        outcomes[caller] = outcome;
        const changed = !isDeepStrictEqual(await stateOf(app), before);
        if (changed !== (outcome === 'resolved')) wrongChanges.push(`${caller}: ${outcome}, ${changed ? 'changed' : 'unchanged'}`);
      }
      assert.deepEqual(outcomes, operation.expected);
      assert.deepEqual(wrongChanges, [], 'a refusal changed something, or a success nothing');
    });
  }

  it('lets only those allowed read the app, each of them what the operator reads, and a read changes nothing', async () => {
    const app = await sharedApp();
    // The app's page and its events page warn of a ClientSecret sent from a browser: one was.
    tessera.events.record('app.secret_exposed', app.appId, anonymousRequest(ADDRESS, 'https://shop.example'), 'admin', {
      secret: 'current',
      origin: 'https://shop.example',
    });
    const before = await stateOf(app);
    const wrongAnswers: string[] = [];
    for (const read of READS) {
      const operatorReads = await read.run(tessera, app, OPERATOR);
      const outcomes: Partial<Record<Caller, Outcome>> = {};
      for (const caller of CALLERS) {
        const answer = read.run(tessera, app, contextOf(caller, app));
        outcomes[caller] = await outcomeOf(answer);
        if (outcomes[caller] === 'resolved' && !isDeepStrictEqual(await answer, operatorReads))
          wrongAnswers.push(`${read.name}: ${caller}`);
      }
      assert.deepEqual(outcomes, read.expected, read.name);
    }
    assert.deepEqual(wrongAnswers, [], 'a caller let in read something else than the operator');
    assert.equal((await tessera.appEvents.secretExposures(app.appId, OPERATOR))[0]?.origin, 'https://shop.example', 'an exposure to read');
    assert.deepEqual(await stateOf(app), before);
  });

  it('lets only the operator do what is the operator\u2019s, never a context that names nobody', async () => {
    const app = await sharedApp();
    await tessera.developers.create('given@example.com', PASSWORD, OPERATOR);
    const operatorOnly: { name: string; run: (context: RequestContext, caller: Caller) => Promise<unknown> }[] = [
      {
        name: 'create a developer',
        run: (context, caller) => tessera.developers.create(`made-by-${caller}@example.com`, PASSWORD, context),
      },
      { name: 'issue a reset link', run: (context) => tessera.developers.issueResetLink('fellow@example.com', context) },
      {
        name: 'disable a developer',
        run: async (context, caller) => {
          const email = `disabled-by-${caller}@example.com`;
          await tessera.developers.create(email, PASSWORD, OPERATOR);
          await tessera.developers.disable(email, context);
        },
      },
      { name: 'create an app for someone else', run: (context) => tessera.ownedApps.create('Given', 'given@example.com', context) },
      { name: 'import apps', run: (context) => tessera.appImports.importApps(new Uint8Array(), context) },
    ];
    for (const operation of operatorOnly) {
      const outcomes: Partial<Record<Caller, Outcome>> = {};
      for (const caller of CALLERS) outcomes[caller] = await outcomeOf(operation.run(contextOf(caller, app), caller));
      const expected = Object.fromEntries(CALLERS.map((caller) => [caller, caller === 'operator' ? 'resolved' : 'FORBIDDEN']));
      assert.deepEqual(outcomes, expected, operation.name);
    }
    for (const caller of CALLERS.filter((caller) => caller !== 'operator')) {
      assert.equal((await tessera.developers.find(`disabled-by-${caller}@example.com`)).disabledAt, null, caller);
      await assert.rejects(tessera.developers.find(`made-by-${caller}@example.com`), { code: 'DEVELOPER_NOT_FOUND' });
    }
    const given = (await tessera.store.apps.list()).filter((listed) => listed.name === 'Given');
    assert.equal(given.length, 1, 'only the operator gave an app');
    // A developer creates its own.
    await tessera.developers.create('maker@example.com', PASSWORD, OPERATOR);
    const maker = await tessera.developers.find('maker@example.com');
    const own = await tessera.ownedApps.create('Mine', maker.email, {
      clientAddress: ADDRESS,
      by: { kind: 'developer', developerId: maker.id },
    });
    assert.equal(own.owner.id, maker.id);
  });

  it('tells whoever opens a working invitation link the app\u2019s name, and nothing else of the app', async () => {
    const app = await sharedApp();
    const invitation = await tessera.members.invitation(app.invitationToken);
    assert.deepEqual(Object.keys(invitation).sort(), ['appName', 'email', 'expiresAt']);
    assert.equal(invitation.appName, 'Shared');
    assert.equal(invitation.email, 'pending@example.com');
    assert.equal(await outcomeOf(tessera.members.invitation(`${app.invitationToken}x`)), 'INVALID_LINK');
    await tessera.members.withdrawInvitation(app.appId, app.invitationId, OPERATOR);
    assert.equal(await outcomeOf(tessera.members.invitation(app.invitationToken)), 'INVALID_LINK');
  });

  it('answers a developer who is no member exactly as for an app that does not exist', async () => {
    const app = await sharedApp();
    const missing: SharedApp = { ...app, appId: 'no-such-app' };
    const asStranger = contextOf('stranger', app);
    for (const operation of [...OPERATIONS, ...READS]) {
      const refusal = await messageOf(operation.run(tessera, app, asStranger));
      assert.equal(refusal, await messageOf(operation.run(tessera, missing, asStranger)), operation.name);
      assert.match(refusal, /^APP_NOT_FOUND: /, operation.name);
    }
  });

  it('says what each caller may do with the credentials, as the service then enforces it', async () => {
    const app = await sharedApp();
    const scopes = ['events:read', 'credentials:manage'];
    const withheld: Partial<Record<Caller, string[] | Outcome>> = {};
    for (const caller of CALLERS) {
      try {
        withheld[caller] = (await tessera.credentials.permissions(app.appId, contextOf(caller, app))).withheldFrom(scopes);
      } catch (error) {
        if (!isTesseraError(error)) throw error;
        withheld[caller] = error.code;
      }
    }
    assert.deepEqual(withheld, {
      operator: [],
      admin: [],
      otherAppAdmin: 'ADMIN_REQUIRED',
      anonymous: 'ADMIN_REQUIRED',
      nobody: 'ADMIN_REQUIRED',
      owner: [],
      collaborator: ['credentials:manage'],
      fellow: ['credentials:manage'],
      stranger: 'APP_NOT_FOUND',
    });
    const collaborator = contextOf('collaborator', app);
    const permissions = await tessera.credentials.permissions(app.appId, collaborator);
    assert.equal(permissions.mayGive('events:read'), true);
    assert.equal(permissions.mayRotate({ scopes: ['credentials:manage'] }), false);
    const refused = await messageOf(tessera.credentials.create(app.appId, { name: 'Managers', scopes }, collaborator));
    assert.match(refused, /^FORBIDDEN: /);
  });

  it('gives a developer its role with each action it allows, and refuses as authorize does', async () => {
    const app = await sharedApp();
    const owner = await tessera.members.permissions(app.appId, 'view_app', contextOf('owner', app));
    assert.equal(owner.role, 'owner');
    assert.ok(Object.values(owner.may).every((may) => may));
    const collaborator = await tessera.members.permissions(app.appId, 'view_app', contextOf('collaborator', app));
    assert.equal(collaborator.role, 'collaborator');
    assert.deepEqual(
      Object.entries(collaborator.may)
        .filter(([, may]) => !may)
        .map(([action]) => action)
        .sort(),
      ['delete_app', 'manage_collaborators', 'manage_webhooks', 'rotate_secret'],
    );
    assert.equal(await outcomeOf(tessera.members.permissions(app.appId, 'rotate_secret', contextOf('collaborator', app))), 'FORBIDDEN');
    assert.equal(await outcomeOf(tessera.members.permissions(app.appId, 'view_app', contextOf('stranger', app))), 'APP_NOT_FOUND');
    assert.equal(await outcomeOf(tessera.members.permissions(app.appId, 'view_app', OPERATOR)), 'FORBIDDEN');
  });

  it("reads a developer's role once for a request's context, however many services it calls", async () => {
    const app = await sharedApp();
    const members = tessera.store.developers.members;
    const roleOf = members.roleOf.bind(members);
    let reads = 0;
    members.roleOf = async (appId, developerId) => {
      reads++;
      return roleOf(appId, developerId);
    };
    try {
      // What a credentials page asks for one request.
      const request = contextOf('collaborator', app);
      await tessera.credentials.permissions(app.appId, request);
      await Promise.all([
        tessera.apps.show(app.appId, request),
        tessera.credentials.list(app.appId, request),
        tessera.members.membersOf(app.appId, request),
        tessera.appEvents.list(app.appId, { limit: 10 }, request),
      ]);
      await tessera.credentials.create(app.appId, { name: 'Reports', scopes: ['events:read'] }, request);
      assert.equal(reads, 1);
      // The next request reads it again: a role removed in between is seen there.
      await tessera.members.removeCollaborator(app.appId, developer('collaborator').id, OPERATOR);
      reads = 0;
      assert.equal(await outcomeOf(tessera.apps.show(app.appId, contextOf('collaborator', app))), 'APP_NOT_FOUND');
      assert.equal(reads, 1);
    } finally {
      members.roleOf = roleOf;
    }
  });
});
