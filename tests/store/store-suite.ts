import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { DEFAULT_APP_CONFIGURATION, MAX_APP_NAME_LENGTH, type AppConfiguration, type AppRecord } from 'tessera-tokens/internal/apps/app.js';
import { StoreConflictError } from 'tessera-tokens/internal/transaction.js';
import { replayClaim, SERIALS_PER_BLOCK } from '../../src/attestation/store.js';
import { openStore } from '../../src/store/open.js';
import type { RevokedCredentialRecord } from '../../src/credentials/store.js';
import type { EventCount } from '../../src/events/counts.js';
import { newIdempotencyKey, type ChangeEventType, type NewAuditEvent } from '../../src/events/event.js';
import type { Store, StoreChange } from '../../src/store/store.js';
import { MAX_INSTANT } from 'tessera-tokens/internal/tokens/expiry.js';
import { makeApp, makeCredential, makeDeveloper, makeEvent, makeToken, T0 } from '../helpers/fixtures.js';
import type { TestStore } from '../helpers/store.js';
import { developerStoreSuite } from './developer-store-suite.js';
import { changeConfiguration, deleteApp, insertMany, revokeAll, rotateClientSecret, updateConfiguration } from '../helpers/composed.js';

export interface StoreSuiteOptions {
  /**
   * Opens a second, independent connection to the database of `testStore`, as another process (the
   * CLI, another instance) would. Default: `openStore(testStore.databaseUrl)`, which is what such a
   * process does. The suite closes it.
   */
  openSecondConnection?: (testStore: TestStore) => Promise<Store>;
}

/** The longest the contract lets a change made elsewhere go unnoticed. */
const CHANGE_DEADLINE_MS = 1000;
/** Longer than any poll interval of a test store. */
const SETTLE_MS = 300;

/** The app a change names; undefined for "anything"; 'revocations' for new single revocations. */
function changedApp(change: StoreChange): string | undefined {
  return change === 'anything' ? undefined : change === 'revocations' ? change : change.appId;
}

/** An audit builder for changes whose events a test does not look at. */
const noEvents = () => [];

/** An event both backends refuse to write (`type` is NOT NULL): the change it comes with must not happen either. */
function unwritableEvent(appId: string): NewAuditEvent {
  return makeEvent(appId, { type: null as unknown as NewAuditEvent['type'] });
}

/**
 * The behaviour every `Store` backend must have. Call it once per backend with an opener giving a
 * fresh, empty store each time; nothing here knows which backend it runs against.
 */
export function storeSuite(name: string, open: () => Promise<TestStore>, options: StoreSuiteOptions = {}): void {
  const openSecondConnection = options.openSecondConnection ?? ((testStore: TestStore) => openStore(testStore.databaseUrl));

  describe(`Store (${name})`, () => {
    let testStore: TestStore;
    let store: Store;

    beforeEach(async () => {
      testStore = await open();
      store = testStore.store;
    });
    afterEach(async () => {
      await testStore.dispose();
    });

    describe('apps', () => {
      it('starts empty', async () => {
        assert.equal(await store.apps.count(), 0);
        assert.deepEqual(await store.apps.list(), []);
      });

      it('finds an inserted app by its AppID, every field as inserted', async () => {
        const app = makeApp();
        await store.apps.insert(app);
        assert.deepEqual(await store.apps.findById(app.appId), app);
      });

      it('answers undefined for an unknown AppID', async () => {
        await store.apps.insert(makeApp());
        assert.equal(await store.apps.findById('0123456789abcdef'), undefined);
        assert.equal(await store.apps.findById(''), undefined);
      });

      it('finds each of many apps asked for at once, and none that is not there (one statement a turn on PostgreSQL)', async () => {
        const apps = Array.from({ length: 30 }, () => makeApp());
        for (const app of apps) await store.apps.insert(app);
        const unknown = Array.from({ length: 30 }, () => randomBytes(8).toString('hex'));
        const found = await Promise.all(
          [...apps.map((app) => app.appId), ...unknown, apps[0]!.appId].map(async (appId) => store.apps.findById(appId)),
        );
        assert.deepEqual(found, [...apps, ...unknown.map(() => undefined), apps[0]]);
      });

      it('round-trips the ClientSecret hash as equal bytes, a Buffer', async () => {
        // Zero bytes, high bytes and a trailing zero are where text conversions go wrong.
        const hash = Buffer.from([0, 255, 0, 128, ...randomBytes(24), 0x80, 0xff, 0, 0]);
        const app = makeApp({ clientSecretHash: hash });
        await store.apps.insert(app);
        const found = await store.apps.findById(app.appId);
        assert.ok(found);
        assert.ok(Buffer.isBuffer(found.clientSecretHash));
        assert.equal(found.clientSecretHash.length, 32);
        assert.ok(found.clientSecretHash.equals(hash));
      });

      it('round-trips a configuration, the name and the creation time', async () => {
        const app = makeApp({
          name: `O'Brien "quoted" ; DROP TABLE apps; -- 名前 😀 ${'x'.repeat(MAX_APP_NAME_LENGTH - 40)}`,
          createdAt: Date.parse('2099-12-31T23:59:59.999Z'),
          configuration: {
            ...DEFAULT_APP_CONFIGURATION,
            anonymousAttestation: 'enforce',
            basicAnonymous: false,
            powAlgorithm: 'PBKDF2/SHA-512',
            powCost: 5000,
            powMaxAttempts: 1234,
            powRisesAbovePerMinute: 600,
            adminTokenMaxLifetimeSeconds: 3600,
            anonymousTokenMaxLifetimeSeconds: 86_400 * 365,
            requireAppKey: true,
            allowedOrigins: ['https://app.example.com', 'http://localhost:5173', 'https://*.example.org'],
          },
        });
        const other = makeApp({
          configuration: {
            ...DEFAULT_APP_CONFIGURATION,
            adminTokenMaxLifetimeSeconds: null,
            anonymousTokenMaxLifetimeSeconds: 60,
            requireAppKey: false,
            allowedOrigins: [],
          },
        });
        await store.apps.insert(app);
        await store.apps.insert(other);
        assert.deepEqual(await store.apps.findById(app.appId), app);
        assert.deepEqual(await store.apps.findById(other.appId), other);
      });

      it('lists apps oldest first and counts them', async () => {
        const middle = makeApp({ createdAt: T0 + 2000 });
        const newest = makeApp({ createdAt: T0 + 3000 });
        const oldest = makeApp({ createdAt: T0 + 1000 });
        for (const app of [middle, newest, oldest]) await store.apps.insert(app);
        assert.deepEqual(await store.apps.list(), [oldest, middle, newest]);
        assert.equal(await store.apps.count(), 3);
      });

      it('refuses an app whose AppID is taken, keeping the existing one', async () => {
        const app = makeApp();
        await store.apps.insert(app);
        await assert.rejects(store.apps.insert(makeApp({ appId: app.appId })), StoreConflictError);
        assert.equal(await store.apps.count(), 1);
        assert.deepEqual(await store.apps.findById(app.appId), app);
      });

      it('refuses an app whose ClientID is taken, keeping the existing one', async () => {
        const app = makeApp();
        await store.apps.insert(app);
        const clash = makeApp({ clientId: app.clientId });
        await assert.rejects(store.apps.insert(clash), StoreConflictError);
        assert.equal(await store.apps.count(), 1);
        assert.equal(await store.apps.findById(clash.appId), undefined);
        assert.deepEqual(await store.apps.findById(app.appId), app);
      });

      it('replaces the ClientSecret hash of one app only, with the events built of the rotation', async () => {
        const app = makeApp();
        const other = makeApp();
        await store.apps.insert(app);
        await store.apps.insert(other);
        const admin = makeToken(app.appId, { kind: 'admin' });
        await store.tokens.insert(admin, 0);
        const rotated = randomBytes(32);
        const seen: unknown[] = [];
        const rotation = await rotateClientSecret(
          store,
          app.appId,
          rotated,
          { revokeAdminTokens: false, previousSecretValidUntil: null },
          (result) => {
            seen.push(result);
            return [makeEvent(app.appId, { type: 'app.secret_rotated', details: { ...result } })];
          },
        );
        assert.deepEqual(rotation, { adminTokensRevoked: 0 });
        assert.deepEqual(seen, [{ adminTokensRevoked: 0 }]);
        assert.deepEqual(await store.apps.findById(app.appId), { ...app, clientSecretHash: rotated, adminGeneration: 1 });
        assert.deepEqual(await store.apps.findById(other.appId), other);
        assert.deepEqual(await store.tokens.findBySelector(admin.selector), admin, 'admin tokens are kept unless asked');
        const events = await store.events.list({ appId: app.appId, limit: 10 });
        assert.deepEqual(
          events.map((event) => [event.type, event.details]),
          [['app.secret_rotated', { adminTokensRevoked: 0 }]],
        );
      });

      it("rotates a ClientSecret and revokes the app's admin tokens (only those) with both events, in one transaction", async () => {
        const app = makeApp();
        const other = makeApp();
        await store.apps.insert(app);
        await store.apps.insert(other);
        const admins = [makeToken(app.appId, { kind: 'admin' }), makeToken(app.appId, { kind: 'admin' })];
        const kept = [makeToken(app.appId), makeToken(other.appId, { kind: 'admin' })];
        for (const token of [...admins, ...kept]) await store.tokens.insert(token, 0);
        const rotated = randomBytes(32);
        const rotation = await rotateClientSecret(
          store,
          app.appId,
          rotated,
          { revokeAdminTokens: true, previousSecretValidUntil: null },
          ({ adminTokensRevoked }) => [
            makeEvent(app.appId, { type: 'token.revoked', details: { kind: 'admin', scope: 'app', count: adminTokensRevoked } }),
            makeEvent(app.appId, { type: 'app.secret_rotated', details: { adminTokensRevoked } }),
          ],
        );
        assert.deepEqual(rotation, { adminTokensRevoked: 2 });
        assert.ok((await store.apps.findById(app.appId))?.clientSecretHash.equals(rotated));
        for (const token of admins) assert.equal(await store.tokens.findBySelector(token.selector), undefined);
        for (const token of kept) assert.deepEqual(await store.tokens.findBySelector(token.selector), token);
        const events = await store.events.list({ appId: app.appId, limit: 10 });
        assert.deepEqual(
          events.reverse().map((event) => [event.type, event.details]),
          [
            ['token.revoked', { kind: 'admin', scope: 'app', count: 2 }],
            ['app.secret_rotated', { adminTokensRevoked: 2 }],
          ],
        );
      });

      it('rotates nothing and revokes nothing when the events cannot be written, or cannot be built', async () => {
        const app = makeApp();
        await store.apps.insert(app);
        const admin = makeToken(app.appId, { kind: 'admin' });
        await store.tokens.insert(admin, 0);
        const failures: Array<() => NewAuditEvent[]> = [
          () => [makeEvent(app.appId, { type: 'app.secret_rotated' }), unwritableEvent(app.appId)],
          () => {
            throw new Error('no events');
          },
        ];
        for (const audit of failures) {
          await assert.rejects(
            rotateClientSecret(store, app.appId, randomBytes(32), { revokeAdminTokens: true, previousSecretValidUntil: null }, audit),
          );
          assert.deepEqual(await store.apps.findById(app.appId), app);
          assert.deepEqual(await store.tokens.findBySelector(admin.selector), admin);
          assert.deepEqual(await store.events.list({ appId: app.appId, limit: 10 }), []);
        }
      });

      it('answers undefined when rotating the ClientSecret of an unknown app, creating nothing and writing no event', async () => {
        let built = 0;
        const audit = () => {
          built++;
          return [makeEvent('0123456789abcdef')];
        };
        assert.equal(
          await rotateClientSecret(
            store,
            '0123456789abcdef',
            randomBytes(32),
            { revokeAdminTokens: true, previousSecretValidUntil: null },
            audit,
          ),
          undefined,
        );
        assert.equal(built, 0);
        assert.equal(await store.apps.count(), 0);
        assert.deepEqual(await store.events.list({ appId: '0123456789abcdef', limit: 10 }), []);
      });

      it('round-trips a previous ClientSecret (its digest and its end) as inserted', async () => {
        const app = makeApp({ previousSecret: { hash: Buffer.from([0, 255, ...randomBytes(28), 0x80, 0]), validUntil: T0 + 3_600_000 } });
        await store.apps.insert(app);
        const found = await store.apps.findById(app.appId);
        assert.deepEqual(found, app);
        assert.ok(Buffer.isBuffer(found?.previousSecret?.hash));
      });

      it('keeps the replaced ClientSecret hash as the previous one until the given instant, in the same change', async () => {
        const app = makeApp();
        const other = makeApp();
        await store.apps.insert(app);
        await store.apps.insert(other);
        const rotated = randomBytes(32);
        const validUntil = T0 + 86_400_000;
        const rotation = await rotateClientSecret(
          store,
          app.appId,
          rotated,
          { revokeAdminTokens: false, previousSecretValidUntil: validUntil },
          (result) => [makeEvent(app.appId, { type: 'app.secret_rotated', details: { ...result, previousSecretValidUntil: validUntil } })],
        );
        assert.deepEqual(rotation, { adminTokensRevoked: 0 });
        assert.deepEqual(await store.apps.findById(app.appId), {
          ...app,
          clientSecretHash: rotated,
          previousSecret: { hash: app.clientSecretHash, validUntil },
          adminGeneration: 1,
        });
        assert.deepEqual(await store.apps.findById(other.appId), other);
        const events = await store.events.list({ appId: app.appId, limit: 10 });
        assert.deepEqual(
          events.map((event) => event.details),
          [{ adminTokensRevoked: 0, previousSecretValidUntil: validUntil }],
        );
      });

      it('keeps one previous ClientSecret at most: a second rotation replaces it, one without a grace period drops it', async () => {
        const app = makeApp();
        await store.apps.insert(app);
        const [second, third, fourth] = [randomBytes(32), randomBytes(32), randomBytes(32)];
        const rotate = (hash: Buffer, previousSecretValidUntil: number | null) =>
          rotateClientSecret(store, app.appId, hash, { revokeAdminTokens: false, previousSecretValidUntil }, noEvents);
        await rotate(second, T0 + 1000);
        await rotate(third, T0 + 2000);
        assert.deepEqual(await store.apps.findById(app.appId), {
          ...app,
          clientSecretHash: third,
          previousSecret: { hash: second, validUntil: T0 + 2000 },
          adminGeneration: 2,
        });
        await rotate(fourth, null);
        assert.deepEqual(await store.apps.findById(app.appId), {
          ...app,
          clientSecretHash: fourth,
          previousSecret: null,
          adminGeneration: 3,
        });
      });

      it('keeps the previous ClientSecret as it was when a rotation fails', async () => {
        const app = makeApp({ previousSecret: { hash: randomBytes(32), validUntil: T0 + 5000 } });
        await store.apps.insert(app);
        await assert.rejects(
          rotateClientSecret(store, app.appId, randomBytes(32), { revokeAdminTokens: false, previousSecretValidUntil: T0 + 9000 }, () => [
            unwritableEvent(app.appId),
          ]),
        );
        assert.deepEqual(await store.apps.findById(app.appId), app);
      });

      it('rotates with a once value only by claiming it: of rotations sent together with one value, exactly one is made', async () => {
        const app = makeApp();
        await store.apps.insert(app);
        const once = { value: randomBytes(16).toString('base64url'), keepUntil: T0 + 3600_000 };
        const hashes = Array.from({ length: 4 }, () => randomBytes(32));
        const outcomes = await Promise.allSettled(
          hashes.map((hash, i) =>
            rotateClientSecret(store, app.appId, hash, { revokeAdminTokens: false, previousSecretValidUntil: T0 + i, once }, noEvents),
          ),
        );
        const made = outcomes.flatMap((outcome, i) => (outcome.status === 'fulfilled' ? [i] : []));
        assert.equal(made.length, 1, 'one rotation');
        for (const outcome of outcomes)
          if (outcome.status === 'rejected') assert.equal((outcome.reason as { code?: string }).code, 'CONFLICT', String(outcome.reason));
        const [winner] = made as [number];
        assert.deepEqual(await store.apps.findById(app.appId), {
          ...app,
          clientSecretHash: hashes[winner],
          previousSecret: { hash: app.clientSecretHash, validUntil: T0 + winner },
          adminGeneration: 1,
        });
        await assert.rejects(
          rotateClientSecret(
            store,
            app.appId,
            randomBytes(32),
            { revokeAdminTokens: true, previousSecretValidUntil: null, once },
            noEvents,
          ),
          { code: 'CONFLICT' },
        );
        assert.equal((await store.apps.findById(app.appId))?.clientSecretHash.equals(hashes[winner]!), true, 'nothing changed');
      });

      it('claims no once value of a rotation that is not made', async () => {
        const app = makeApp();
        await store.apps.insert(app);
        const once = { value: randomBytes(16).toString('base64url'), keepUntil: T0 + 3600_000 };
        await assert.rejects(
          rotateClientSecret(store, app.appId, randomBytes(32), { revokeAdminTokens: false, previousSecretValidUntil: null, once }, () => [
            unwritableEvent(app.appId),
          ]),
        );
        assert.equal(
          await rotateClientSecret(
            store,
            '0123456789abcdef',
            randomBytes(32),
            { revokeAdminTokens: false, previousSecretValidUntil: null, once },
            noEvents,
          ),
          undefined,
        );
        assert.deepEqual(
          await rotateClientSecret(
            store,
            app.appId,
            randomBytes(32),
            { revokeAdminTokens: false, previousSecretValidUntil: null, once },
            noEvents,
          ),
          { adminTokensRevoked: 0 },
        );
      });

      it('deletes an app: it is gone, and deleting it again answers false', async () => {
        const app = makeApp();
        const other = makeApp();
        await store.apps.insert(app);
        await store.apps.insert(other);
        assert.equal(await deleteApp(store, app.appId, () => []), true);
        assert.equal(await store.apps.findById(app.appId), undefined);
        assert.deepEqual(await store.apps.list(), [other]);
        assert.equal(await store.apps.count(), 1);
        assert.equal(await deleteApp(store, app.appId, () => []), false);
        assert.equal(await deleteApp(store, '0123456789abcdef', () => []), false);
      });

      it('deletes the tokens of a deleted app, and only those', async () => {
        const app = makeApp();
        const other = makeApp();
        await store.apps.insert(app);
        await store.apps.insert(other);
        const gone = [makeToken(app.appId, { kind: 'admin' }), makeToken(app.appId), makeToken(app.appId, { expiresAt: T0 + 1 })];
        const kept = makeToken(other.appId, { kind: 'admin' });
        for (const token of [...gone, kept]) await store.tokens.insert(token, 0);
        assert.equal(await deleteApp(store, app.appId, () => []), true);
        for (const token of gone) assert.equal(await store.tokens.findBySelector(token.selector), undefined);
        assert.deepEqual(await store.tokens.findBySelector(kept.selector), kept);
      });

      it('updates the given configuration fields and keeps the others', async () => {
        const origins = ['https://a.example.com', 'https://b.example.com'];
        const app = makeApp({
          configuration: {
            ...DEFAULT_APP_CONFIGURATION,
            adminTokenMaxLifetimeSeconds: 60,
            anonymousTokenMaxLifetimeSeconds: null,
            requireAppKey: true,
            allowedOrigins: origins,
          },
        });
        await store.apps.insert(app);
        const updated = await updateConfiguration(store, app.appId, { anonymousTokenMaxLifetimeSeconds: 3600 }, noEvents);
        const expected = {
          ...app,
          configuration: {
            ...DEFAULT_APP_CONFIGURATION,
            adminTokenMaxLifetimeSeconds: 60,
            anonymousTokenMaxLifetimeSeconds: 3600,
            requireAppKey: true,
            allowedOrigins: origins,
          },
        };
        assert.deepEqual(updated, expected);
        assert.deepEqual(await store.apps.findById(app.appId), expected);

        // null sets a field back to "no maximum"; a list replaces the list, shorter or not
        await updateConfiguration(
          store,
          app.appId,
          { adminTokenMaxLifetimeSeconds: null, requireAppKey: false, allowedOrigins: ['https://c.example.com'] },
          noEvents,
        );
        assert.deepEqual((await store.apps.findById(app.appId))?.configuration, {
          ...DEFAULT_APP_CONFIGURATION,
          adminTokenMaxLifetimeSeconds: null,
          anonymousTokenMaxLifetimeSeconds: 3600,
          requireAppKey: false,
          allowedOrigins: ['https://c.example.com'],
        });
        assert.equal(await updateConfiguration(store, 'no-such-app', { requireAppKey: true }, () => [makeEvent('no-such-app')]), undefined);
        assert.deepEqual(await store.events.list({ appId: 'no-such-app', limit: 10 }), []);
      });

      it('writes the events built of the updated app with a configuration change, or changes nothing', async () => {
        const app = makeApp();
        await store.apps.insert(app);
        const updated = await updateConfiguration(store, app.appId, { requireAppKey: true }, (result) => [
          makeEvent(app.appId, { type: 'app.configuration_changed', details: { requireAppKey: result.configuration.requireAppKey } }),
        ]);
        assert.equal(updated?.configuration.requireAppKey, true);
        const events = await store.events.list({ appId: app.appId, limit: 10 });
        assert.deepEqual(
          events.map((event) => [event.type, event.details]),
          [['app.configuration_changed', { requireAppKey: true }]],
        );

        await assert.rejects(updateConfiguration(store, app.appId, { requireAppKey: false }, () => [unwritableEvent(app.appId)]));
        assert.equal((await store.apps.findById(app.appId))?.configuration.requireAppKey, true);
        assert.equal((await store.events.list({ appId: app.appId, limit: 10 })).length, 1);
      });

      it('keeps both of two concurrent changes of different configuration fields', async () => {
        const app = makeApp();
        await store.apps.insert(app);
        const second = await openSecondConnection(testStore);
        try {
          await Promise.all([
            updateConfiguration(store, app.appId, { adminTokenMaxLifetimeSeconds: 10 }, noEvents),
            updateConfiguration(second, app.appId, { requireAppKey: true }, noEvents),
          ]);
        } finally {
          await second.close();
        }
        assert.deepEqual((await store.apps.findById(app.appId))?.configuration, {
          ...DEFAULT_APP_CONFIGURATION,
          adminTokenMaxLifetimeSeconds: 10,
          anonymousTokenMaxLifetimeSeconds: null,
          requireAppKey: true,
          allowedOrigins: [],
        });
      });

      it('changes the configuration from what it is, the row held: changes computed at once on two connections all hold', async () => {
        const app = makeApp();
        await store.apps.insert(app);
        const addOrigin = (origin: string) => (current: AppConfiguration) =>
          current.allowedOrigins.includes(origin) ? null : { allowedOrigins: [...current.allowedOrigins, origin] };
        const second = await openSecondConnection(testStore);
        try {
          await Promise.all(
            Array.from({ length: 8 }, (_, index) =>
              changeConfiguration(index % 2 === 0 ? store : second, app.appId, addOrigin(`http://localhost:${5000 + index}`), noEvents),
            ),
          );
        } finally {
          await second.close();
        }
        const origins = (await store.apps.findById(app.appId))!.configuration.allowedOrigins;
        assert.deepEqual(
          [...origins].sort(),
          Array.from({ length: 8 }, (_, index) => `http://localhost:${5000 + index}`),
        );

        // No change: nothing written, no event.
        const same = await changeConfiguration(store, app.appId, addOrigin('http://localhost:5000'), () => [
          makeEvent(app.appId, { type: 'app.configuration_changed' }),
        ]);
        assert.equal(same?.changed, false);
        assert.equal((await store.events.list({ appId: app.appId, limit: 10 })).length, 0);
        // A change that throws, or whose events cannot be written: nothing written.
        await assert.rejects(
          changeConfiguration(
            store,
            app.appId,
            () => {
              throw new Error('refused');
            },
            noEvents,
          ),
          /refused/,
        );
        await assert.rejects(changeConfiguration(store, app.appId, addOrigin('http://localhost:6000'), () => [unwritableEvent(app.appId)]));
        assert.deepEqual((await store.apps.findById(app.appId))!.configuration.allowedOrigins, origins);
        assert.equal(await changeConfiguration(store, '0000000000000000', addOrigin('http://localhost:1'), noEvents), undefined);
      });

      it("deletes the events of a deleted app, and no other app's", async () => {
        const [app, other] = [makeApp(), makeApp()];
        await store.apps.insert(app);
        await store.apps.insert(other);
        await store.events.append([makeEvent(app.appId)]);
        await store.events.append([makeEvent(other.appId)]);
        await deleteApp(store, app.appId, () => []);
        assert.deepEqual(await store.events.list({ appId: app.appId, limit: 10 }), []);
        assert.equal((await store.events.list({ appId: other.appId, limit: 10 })).length, 1);
      });

      it('frees the AppID and ClientID of a deleted app', async () => {
        const app = makeApp();
        await store.apps.insert(app);
        await deleteApp(store, app.appId, () => []);
        await store.apps.insert(app);
        assert.deepEqual(await store.apps.findById(app.appId), app);
      });

      it('inserts many apps at once (an import), each as given, with its owner and the events built', async () => {
        const owner = makeDeveloper();
        await store.developers.accounts.insert(owner);
        // More than one statement's batch of rows.
        const apps = Array.from({ length: 2_500 }, (_, index) => makeApp(index % 3 === 0 ? { appId: randomBytes(4).toString('hex') } : {}));
        const owned = apps.filter((_, index) => index % 2 === 0);
        const written = await insertMany(
          store,
          apps.map((app, index) => ({ app, ownerId: index % 2 === 0 ? owner.id : null })),
          () => owned.map((app) => makeEvent(app.appId, { type: 'app.owner_changed', principal: 'operator' })),
        );
        assert.equal(written, true);
        assert.equal(await store.apps.count(), apps.length);
        for (const app of [apps[0]!, apps[1]!, apps.at(-1)!]) assert.deepEqual(await store.apps.findById(app.appId), app);
        const withOwners = await store.apps.listWithOwners();
        assert.equal(withOwners.length, apps.length);
        const ownerOf = new Map(withOwners.map(({ app, ownerEmail }) => [app.appId, ownerEmail]));
        assert.equal(ownerOf.get(apps[0]!.appId), owner.email);
        assert.equal(ownerOf.get(apps[1]!.appId), null);
        assert.deepEqual(await store.developers.members.roleOf(apps[2]!.appId, owner.id), 'owner');
        assert.equal((await store.events.list({ appId: apps[0]!.appId, limit: 10 })).length, 1);
        assert.equal((await store.events.list({ appId: apps[1]!.appId, limit: 10 })).length, 0);

        const other = makeApp();
        const keysOf = (app: AppRecord) => ({
          appId: app.appId,
          appKey: app.appKey,
          clientId: app.clientId,
          clientSecretHash: app.clientSecretHash,
        });
        const found = await store.apps.findByKeys(
          [apps[5]!.appId, other.appId, apps[7]!.clientId, apps[9]!.appId],
          [apps[6]!.clientId, other.clientId, apps[8]!.appId, apps[9]!.clientId],
        );
        assert.deepEqual(
          found.sort((a, b) => a.appId.localeCompare(b.appId)),
          [apps[5]!, apps[6]!, apps[9]!].map(keysOf).sort((a, b) => a.appId.localeCompare(b.appId)),
        );
      });

      it('inserts none of many apps when one AppID or ClientID is taken, an owner is disabled or unknown, or the events cannot be written', async () => {
        const taken = makeApp();
        await store.apps.insert(taken);
        const owner = makeDeveloper();
        const disabled = makeDeveloper({ disabledAt: T0 });
        await store.developers.accounts.insert(owner);
        await store.developers.accounts.insert(disabled);
        const many = () => Array.from({ length: 2_500 }, () => ({ app: makeApp(), ownerId: null as string | null }));

        for (const clash of [{ appId: taken.appId }, { clientId: taken.clientId }]) {
          const apps = many();
          apps.push({ app: makeApp(clash), ownerId: null });
          await assert.rejects(insertMany(store, apps, noEvents), StoreConflictError);
        }
        for (const ownerId of [disabled.id, 'no-such-developer']) {
          const apps = many();
          apps.push({ app: makeApp(), ownerId: owner.id }, { app: makeApp(), ownerId });
          assert.equal(await insertMany(store, apps, noEvents), false);
        }
        const apps = many();
        await assert.rejects(insertMany(store, apps, () => [unwritableEvent(apps[0]!.app.appId)]));
        assert.equal(await store.apps.count(), 1);
        assert.deepEqual(await store.developers.members.ofDeveloper(owner.id), []);
      });
    });

    describe('tokens', () => {
      let app: AppRecord;
      beforeEach(async () => {
        app = makeApp();
        await store.apps.insert(app);
      });

      it('finds an inserted token by its hash, every field as inserted', async () => {
        const tokens = [
          makeToken(app.appId, { kind: 'admin', issuedAt: T0 + 5, expiresAt: null }),
          makeToken(app.appId, { kind: 'admin', expiresAt: T0 + 86_400_000 }),
          makeToken(app.appId, { kind: 'anonymous', expiresAt: null }),
          makeToken(app.appId, { kind: 'anonymous', expiresAt: T0 + 1 }),
          // The latest expiry the service accepts must survive the store as an exact number.
          makeToken(app.appId, { kind: 'anonymous', expiresAt: MAX_INSTANT }),
        ];
        for (const token of tokens) await store.tokens.insert(token, 0);
        for (const token of tokens) {
          const found = await store.tokens.findBySelector(Buffer.from(token.selector));
          assert.deepEqual(found, token);
        }
      });

      it('answers undefined for an unknown selector, even one byte off or a prefix', async () => {
        const token = makeToken(app.appId);
        await store.tokens.insert(token, 0);
        const oneByteOff = Buffer.from(token.selector);
        oneByteOff[15] = oneByteOff[15]! ^ 1;
        assert.equal(await store.tokens.findBySelector(oneByteOff), undefined);
        assert.equal(await store.tokens.findBySelector(token.selector.subarray(0, 15)), undefined);
        assert.equal(await store.tokens.findBySelector(randomBytes(16)), undefined);
        assert.equal(await store.tokens.findBySelector(Buffer.alloc(0)), undefined);
      });

      it('finds each of many tokens asked for at once, and none that is not there', async () => {
        const tokens = Array.from({ length: 30 }, (_, index) => makeToken(app.appId, { kind: index % 2 === 0 ? 'admin' : 'anonymous' }));
        for (const token of tokens) await store.tokens.insert(token, 0);
        const selectors = [...tokens.map((token) => Buffer.from(token.selector)), randomBytes(16), tokens[0]!.selector.subarray(0, 15)];
        const found = await Promise.all(selectors.map(async (selector) => store.tokens.findBySelector(selector)));
        assert.deepEqual(found, [...tokens, undefined, undefined]);
      });

      it('stores every one of many tokens inserted at once', async () => {
        const tokens = Array.from({ length: 2_000 }, () => makeToken(app.appId));
        await Promise.all(tokens.map((token) => store.tokens.insert(token, 0)));
        for (const token of tokens) assert.deepEqual(await store.tokens.findBySelector(token.selector), token);
      });

      it('answers a failed insert on its own, and stores its neighbours', async () => {
        const taken = makeToken(app.appId);
        await store.tokens.insert(taken, 0);
        const before = makeToken(app.appId);
        const after = makeToken(app.appId);
        const results = await Promise.allSettled([
          store.tokens.insert(before, 0),
          store.tokens.insert({ ...makeToken(app.appId), selector: taken.selector }, 0),
          store.tokens.insert(after, 0),
        ]);
        assert.deepEqual(
          results.map((result) => result.status),
          ['fulfilled', 'rejected', 'fulfilled'],
        );
        assert.deepEqual(await store.tokens.findBySelector(before.selector), before);
        assert.deepEqual(await store.tokens.findBySelector(after.selector), after);
      });

      it("stores a token only while its app's admin generation is the one given; every withdrawal of admin authority counts one", async () => {
        const generation = async () => (await store.apps.findById(app.appId))!.adminGeneration;
        assert.equal(await generation(), 0);
        const credential = makeCredential(app.appId);
        await store.credentials.insert(credential);
        await revokeAll(store, app.appId, 'anonymous', T0, noEvents);
        assert.equal(await generation(), 0, 'neither a new credential nor revoking anonymous tokens takes admin authority away');
        await revokeAll(store, app.appId, 'admin', T0, noEvents);
        await revokeAll(store, app.appId, 'all', T0, noEvents);
        await rotateClientSecret(store, app.appId, randomBytes(32), { revokeAdminTokens: false, previousSecretValidUntil: null }, noEvents);
        await store.credentials.rotate(app.appId, credential.clientId, randomBytes(32), null);
        await store.credentials.delete(app.appId, credential.clientId);
        assert.equal(await generation(), 5);

        const [stale, current, elsewhere] = [makeToken(app.appId), makeToken(app.appId), makeToken('0000000000000000')];
        const results = await Promise.all([
          store.tokens.insert(stale, 4),
          store.tokens.insert(current, 5),
          store.tokens.insert(elsewhere, 0),
        ]);
        assert.deepEqual(
          results,
          [undefined, true, undefined],
          'in one batch: a stale generation and an app that is not there store nothing',
        );
        assert.equal(await store.tokens.findBySelector(stale.selector), undefined);
        assert.deepEqual(await store.tokens.findBySelector(current.selector), current);
        assert.equal(await store.tokens.findBySelector(elsewhere.selector), undefined);
      });

      it('deletes one token by its selector, and only that one', async () => {
        const [a, b] = [makeToken(app.appId), makeToken(app.appId)];
        await store.tokens.insert(a, 0);
        await store.tokens.insert(b, 0);
        assert.equal(await store.tokens.delete(a.selector), true);
        assert.equal(await store.tokens.delete(a.selector), undefined);
        assert.equal(await store.tokens.delete(randomBytes(16)), undefined);
        assert.equal(await store.tokens.findBySelector(a.selector), undefined);
        assert.deepEqual(await store.tokens.findBySelector(b.selector), b);
      });

      it("deletes every token of an app, or every one of a kind, and no other app's", async () => {
        const other = makeApp();
        await store.apps.insert(other);
        const admin = [makeToken(app.appId, { kind: 'admin' }), makeToken(app.appId, { kind: 'admin' })];
        const anonymous = [makeToken(app.appId), makeToken(app.appId), makeToken(app.appId)];
        const others = [makeToken(other.appId, { kind: 'admin' }), makeToken(other.appId)];
        for (const token of [...admin, ...anonymous, ...others]) await store.tokens.insert(token, 0);

        const revoked = (kind: string) => (count: number) => [makeEvent(app.appId, { type: 'token.revoked', details: { kind, count } })];
        assert.equal(await revokeAll(store, app.appId, 'admin', T0, revoked('admin')), 2);
        for (const token of admin) assert.equal(await store.tokens.findBySelector(token.selector), undefined);
        for (const token of anonymous) assert.deepEqual(await store.tokens.findBySelector(token.selector), token);
        assert.equal(await revokeAll(store, app.appId, 'all', T0, revoked('all')), 3);
        for (const token of anonymous) assert.equal(await store.tokens.findBySelector(token.selector), undefined);
        assert.equal(await revokeAll(store, app.appId, 'all', T0, revoked('all')), 0);
        for (const token of others) assert.deepEqual(await store.tokens.findBySelector(token.selector), token);
        const events = await store.events.list({ appId: app.appId, limit: 10 });
        assert.deepEqual(
          events.reverse().map((event) => event.details),
          [
            { kind: 'admin', count: 2 },
            { kind: 'all', count: 3 },
            { kind: 'all', count: 0 },
          ],
        );
      });

      it('deletes no token when the events of the deletion cannot be written', async () => {
        const tokens = [makeToken(app.appId, { kind: 'admin' }), makeToken(app.appId)];
        for (const token of tokens) await store.tokens.insert(token, 0);
        for (const kind of ['admin', 'anonymous', 'all'] as const) {
          await assert.rejects(revokeAll(store, app.appId, kind, T0, () => [unwritableEvent(app.appId)]));
        }
        for (const token of tokens) assert.deepEqual(await store.tokens.findBySelector(token.selector), token);
        assert.deepEqual(await store.events.list({ appId: app.appId, limit: 10 }), []);
      });

      it('deletes expired tokens in batches, never one still valid or one that never expires', async () => {
        const now = T0 + 1_000_000;
        const expired = Array.from({ length: 25 }, (_, i) => makeToken(app.appId, { expiresAt: now - i }));
        const valid = [makeToken(app.appId, { expiresAt: now + 1 }), makeToken(app.appId, { expiresAt: null })];
        for (const token of [...expired, ...valid]) await store.tokens.insert(token, 0);
        assert.equal(await store.tokens.deleteExpired(now, 10), 10);
        assert.equal(await store.tokens.deleteExpired(now, 10), 10);
        assert.equal(await store.tokens.deleteExpired(now, 10), 5);
        assert.equal(await store.tokens.deleteExpired(now, 10), 0);
        for (const token of expired) assert.equal(await store.tokens.findBySelector(token.selector), undefined);
        for (const token of valid) assert.deepEqual(await store.tokens.findBySelector(token.selector), token);
      });

      it('keeps tokens whose insert was under way when the store was closed', async () => {
        const token = makeToken(app.appId);
        const inserted = store.tokens.insert(token, 0);
        await testStore.store.close();
        await inserted;
        const reopened = await openSecondConnection(testStore);
        try {
          assert.deepEqual(await reopened.tokens.findBySelector(token.selector), token);
        } finally {
          await reopened.close();
        }
      });
    });

    describe('credentials', () => {
      let app: AppRecord;

      beforeEach(async () => {
        app = makeApp();
        await store.apps.insert(app);
      });

      it('reads an app with its credentials, every field as inserted, oldest first; none for an app without', async () => {
        const first = makeCredential(app.appId, { expiresAt: T0 + 60_000, allowFrom: ['203.0.113.0/24', '2001:db8::/32'] });
        const second = makeCredential(app.appId, { createdAt: T0 + 1, createdBy: { kind: 'developer', developerId: 'd1' } });
        await store.credentials.insert(second);
        await store.credentials.insert(first);
        const found = await store.apps.findById(app.appId);
        assert.deepEqual(found?.credentials, [first, second]);
        assert.deepEqual((await store.apps.list()).find((listed) => listed.appId === app.appId)?.credentials, [first, second]);
        const other = makeApp();
        await store.apps.insert(other);
        assert.deepEqual((await store.apps.findById(other.appId))?.credentials, []);
      });

      it('transactions that lock the app take turns: counted under the lock, a limit is never passed, however many are sent at once', async () => {
        // As `CredentialService.create` composes it: lock, count, insert.
        const insertUnder = (appId: string, limit: number) =>
          store.transaction(async (tx) => {
            if ((await tx.apps.lock(appId, 'NO KEY UPDATE')) === undefined) return 'no app';
            if ((await tx.credentials.countOf(appId)) >= limit) return 'limit';
            await tx.credentials.insert(makeCredential(appId));
            return 'inserted';
          });
        const results = await Promise.all(Array.from({ length: 8 }, () => insertUnder(app.appId, 5)));
        assert.deepEqual(results.sort(), ['inserted', 'inserted', 'inserted', 'inserted', 'inserted', 'limit', 'limit', 'limit']);
        assert.equal((await store.apps.findById(app.appId))?.credentials.length, 5);
        assert.equal(await store.credentials.countOf(app.appId), 5);
        assert.equal(await insertUnder('0000000000000000', 5), 'no app');
      });

      it('writes nothing of a transaction whose events cannot be written, or that throws', async () => {
        const credential = makeCredential(app.appId);
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.credentials.insert(credential);
            await tx.events.append([unwritableEvent(app.appId)]);
          }),
        );
        assert.deepEqual((await store.apps.findById(app.appId))?.credentials, []);
        await store.credentials.insert(credential);
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.credentials.rotate(app.appId, credential.clientId, randomBytes(32), null);
            await tx.events.append([unwritableEvent(app.appId)]);
          }),
        );
        const refused = new Error('refused');
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.credentials.delete(app.appId, credential.clientId);
            throw refused;
          }),
          (error) => error === refused,
        );
        assert.deepEqual((await store.apps.findById(app.appId))?.credentials, [credential]);
        assert.equal((await store.apps.findById(app.appId))?.adminGeneration, 0, 'the withdrawals of admin authority were rolled back');
      });

      it('gives a taken key as StoreConflictError, in a transaction or not, and writes nothing of that transaction', async () => {
        const credential = makeCredential(app.appId);
        await store.credentials.insert(credential);
        await assert.rejects(store.credentials.insert(credential), StoreConflictError);
        const other = makeCredential(app.appId);
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.credentials.insert(other);
            await tx.credentials.insert(credential);
          }),
          StoreConflictError,
        );
        assert.deepEqual((await store.apps.findById(app.appId))?.credentials, [credential]);
      });

      it('claims a once value once: undefined, with nothing written, for a second claim', async () => {
        const once = { value: `once-${randomBytes(8).toString('hex')}`, keepUntil: T0 + 3_600_000 };
        assert.equal(await store.onceClaims.claim(once), true);
        assert.equal(await store.transaction((tx) => tx.onceClaims.claim(once)), undefined);
      });

      it('claims proofs of work made together once each: a batch all new, one with a replay, one with the same proof twice', async () => {
        const claim = () => replayClaim(randomBytes(32).toString('hex'), T0 + 300_000);
        const fresh = [claim(), claim(), claim()];
        assert.deepEqual(await Promise.all(fresh.map((each) => store.attestation.claim(each))), [true, true, true]);
        const next = [claim(), claim()];
        assert.deepEqual(
          await Promise.all([next[0]!, fresh[1]!, next[1]!].map((each) => store.attestation.claim(each))),
          [true, undefined, true],
          'a replay among new proofs: only the new ones are claimed',
        );
        const twice = claim();
        assert.deepEqual(await Promise.all([twice, twice, claim()].map((each) => store.attestation.claim(each))), [true, undefined, true]);
        const again = [...fresh, ...next, twice];
        assert.deepEqual(await Promise.all(again.map((each) => store.attestation.claim(each))), new Array(again.length).fill(undefined));
      });

      it('claims proofs of work by serial once each: blocks never given twice, bits of two blocks in one batch, none in a block gone', async () => {
        const first = await store.attestation.reserveSerials(T0 + 60_000);
        const second = await store.attestation.reserveSerials(T0 + 120_000);
        assert.ok(second > first, `blocks ${first}, ${second}`);
        const serialsOf = (block: number, ...bits: number[]) => bits.map((bit) => block * SERIALS_PER_BLOCK + bit);
        const claimAll = (serials: number[]) => Promise.all(serials.map((serial) => store.attestation.claimSerial(serial)));
        // Bits at both ends of a block's bytes, and the first and last of the block.
        const fresh = [...serialsOf(first, 0, 7, 8, 4095), ...serialsOf(second, 1, 4094)];
        assert.deepEqual(await claimAll(fresh), new Array(fresh.length).fill(true));
        assert.deepEqual(
          await claimAll([...serialsOf(first, 1, 7), ...serialsOf(second, 1, 2), ...serialsOf(first, 1)]),
          [true, undefined, undefined, true, undefined],
          'replays among new serials, and one serial twice: only the first of each new one is claimed',
        );
        assert.deepEqual(await store.transaction((tx) => tx.attestation.claimSerial(serialsOf(first, 9)[0]!)), true);
        assert.deepEqual(await claimAll([...fresh, ...serialsOf(first, 9)]), new Array(fresh.length + 1).fill(undefined));

        // Expired blocks are deleted, and a serial of one is claimed no more; the newer block stays.
        assert.equal(await store.attestation.deleteExpiredSerials(T0 + 60_000, 100), 1);
        assert.deepEqual(await claimAll(serialsOf(first, 100)), [undefined]);
        assert.deepEqual(await claimAll(serialsOf(second, 100)), [true]);
        const third = await store.attestation.reserveSerials(T0 + 180_000);
        assert.ok(third > second, 'an id is never given again, even after the newest block was deleted');
        assert.equal(await store.attestation.deleteExpiredSerials(T0 + 180_000, 100), 2);
        const fourth = await store.attestation.reserveSerials(T0 + 240_000);
        assert.ok(fourth > third, `block ${fourth} after ${third}, every block deleted`);
      });

      it('rotates: the replaced hash is the previous one until the given instant; without one it is dropped', async () => {
        const credential = makeCredential(app.appId);
        await store.credentials.insert(credential);
        const second = randomBytes(32);
        assert.equal(await store.credentials.rotate(app.appId, credential.clientId, second, T0 + 90_000), true);
        let found = (await store.apps.findById(app.appId))!.credentials[0]!;
        assert.ok(found.secretHash.equals(second));
        assert.deepEqual(found.previousSecret, { hash: credential.secretHash, validUntil: T0 + 90_000 });
        const third = randomBytes(32);
        await store.credentials.rotate(app.appId, credential.clientId, third, null);
        found = (await store.apps.findById(app.appId))!.credentials[0]!;
        assert.deepEqual(found.previousSecret, null);
        assert.equal(await store.credentials.rotate(app.appId, 'tcl_000000000000000000000000', third, null), undefined);
        const other = makeApp();
        await store.apps.insert(other);
        assert.equal(await store.credentials.rotate(other.appId, credential.clientId, third, null), undefined, 'another app\u2019s');
      });

      it("deletes a credential with its tokens only, counted for the events; an app's deletion takes its credentials", async () => {
        const credential = makeCredential(app.appId);
        const kept = makeCredential(app.appId);
        await store.credentials.insert(credential);
        await store.credentials.insert(kept);
        const scoped = [1, 2].map(() => makeToken(app.appId, { kind: 'admin', clientId: credential.clientId, scopes: ['events:read'] }));
        const other = makeToken(app.appId, { kind: 'admin', clientId: kept.clientId, scopes: ['a', 'b'] });
        const own = makeToken(app.appId, { kind: 'admin' });
        for (const token of [...scoped, other, own]) await store.tokens.insert(token, 0);
        assert.deepEqual(await store.tokens.findBySelector(other.selector), other, 'a token carries its ClientID and scopes');
        const revoked: RevokedCredentialRecord[] = [
          { clientId: credential.clientId, name: credential.name, madeBy: null, tokensRevoked: 2 },
        ];
        assert.deepEqual(await store.credentials.delete(app.appId, credential.clientId), revoked);
        for (const token of scoped) assert.equal(await store.tokens.findBySelector(token.selector), undefined);
        assert.deepEqual(await store.tokens.findBySelector(other.selector), other);
        assert.deepEqual(await store.tokens.findBySelector(own.selector), own);
        assert.equal(await store.credentials.delete(app.appId, credential.clientId), undefined);
        assert.equal(await deleteApp(store, app.appId, () => []), true);
        await store.apps.insert(app);
        assert.deepEqual((await store.apps.findById(app.appId))?.credentials, [], 'none outlived their app');
      });

      it('deletes with a credential every credential its tokens made, and theirs in turn, with all their tokens; nothing else', async () => {
        const madeBy = (maker: { clientId: string }) => ({ createdBy: { kind: 'admin' as const, clientId: maker.clientId } });
        const root = makeCredential(app.appId, { createdAt: T0 });
        const child = makeCredential(app.appId, { ...madeBy(root), createdAt: T0 + 1 });
        const grandchild = makeCredential(app.appId, { ...madeBy(child), createdAt: T0 + 2 });
        const sibling = makeCredential(app.appId, { createdAt: T0 + 3 });
        const byAppAdmin = makeCredential(app.appId, { ...madeBy(app), createdAt: T0 + 4 });
        for (const credential of [root, child, grandchild, sibling, byAppAdmin]) await store.credentials.insert(credential);
        const tokenOf = (credential: { clientId: string }) =>
          makeToken(app.appId, { kind: 'admin', clientId: credential.clientId, scopes: ['a'] });
        const [rootToken, grandchildToken, siblingToken] = [tokenOf(root), tokenOf(grandchild), tokenOf(sibling)];
        for (const token of [rootToken, grandchildToken, siblingToken]) await store.tokens.insert(token, 0);

        assert.deepEqual(await store.credentials.delete(app.appId, root.clientId), [
          { clientId: root.clientId, name: root.name, madeBy: null, tokensRevoked: 1 },
          { clientId: child.clientId, name: child.name, madeBy: root.clientId, tokensRevoked: 0 },
          { clientId: grandchild.clientId, name: grandchild.name, madeBy: child.clientId, tokensRevoked: 1 },
        ]);
        assert.deepEqual(
          (await store.apps.findById(app.appId))!.credentials.map((credential) => credential.clientId),
          [sibling.clientId, byAppAdmin.clientId],
        );
        for (const token of [rootToken, grandchildToken]) assert.equal(await store.tokens.findBySelector(token.selector), undefined);
        assert.deepEqual(await store.tokens.findBySelector(siblingToken.selector), siblingToken);
      });

      it('writes when a credential was last used at most once an interval', async () => {
        const credential = makeCredential(app.appId);
        await store.credentials.insert(credential);
        const lastUsed = async () => (await store.apps.findById(app.appId))!.credentials[0]!.lastUsedAt;
        await store.credentials.markUsed(credential.clientId, T0 + 1_000, 60_000);
        assert.equal(await lastUsed(), T0 + 1_000);
        await store.credentials.markUsed(credential.clientId, T0 + 30_000, 60_000);
        assert.equal(await lastUsed(), T0 + 1_000);
        await store.credentials.markUsed(credential.clientId, T0 + 61_000, 60_000);
        assert.equal(await lastUsed(), T0 + 61_000);
      });
    });

    describe('keys', () => {
      it('holds one signing key from the start, made once however many connections open the store', async () => {
        const second = await openSecondConnection(testStore);
        try {
          const keys = await store.signingKeys.list();
          assert.equal(keys.length, 1);
          assert.equal(keys[0]!.id, 1);
          assert.equal(keys[0]!.secret?.length, 32);
          assert.equal(keys[0]!.retiredAt, null);
          assert.deepEqual(await second.signingKeys.list(), keys);
        } finally {
          await second.close();
        }
      });

      it('adds keys with the next id, and retires one by erasing its secret; ids are never reused', async () => {
        const added = await store.signingKeys.add(randomBytes(32), T0);
        assert.equal(added.id, 2);
        assert.equal(added.createdAt, T0);
        const retired = await store.signingKeys.retire(2, T0 + 1);
        assert.deepEqual(retired, { id: 2, secret: null, createdAt: T0, retiredAt: T0 + 1 });
        assert.equal(await store.signingKeys.retire(2, T0 + 2), undefined, 'a retired key is not retired again');
        assert.equal(await store.signingKeys.retire(99, T0 + 2), undefined);
        assert.equal((await store.signingKeys.add(randomBytes(32), T0 + 3)).id, 3);
        assert.deepEqual(
          (await store.signingKeys.list()).map((key) => [key.id, key.retiredAt]),
          [
            [1, null],
            [2, T0 + 1],
            [3, null],
          ],
        );
      });
    });

    describe('revoked anonymous tokens and the cut-off', () => {
      let app: AppRecord;
      const id = () => randomBytes(16).toString('latin1');

      beforeEach(async () => {
        app = makeApp();
        await store.apps.insert(app);
      });

      it('keeps each revocation once, in the order written, and hands out only what is new', async () => {
        const first = { id: id(), appId: app.appId, expiresAt: null };
        const second = { id: id(), appId: app.appId, expiresAt: T0 + 1000 };
        assert.equal(await store.revokedTokens.add(first), true);
        assert.equal(await store.revokedTokens.add(first), undefined, 'revoked already');
        assert.equal(await store.revokedTokens.add(second), true);
        const all = await store.revokedTokens.since(0, 10);
        assert.deepEqual(
          all.map(({ seq: _, ...revocation }) => revocation),
          [first, second],
        );
        assert.ok(all[0]!.seq < all[1]!.seq);
        assert.deepEqual(await store.revokedTokens.since(all[0]!.seq, 10), [all[1]]);
        assert.deepEqual(await store.revokedTokens.since(all[1]!.seq, 10), []);
        assert.deepEqual(await store.revokedTokens.since(0, 1), [all[0]]);
      });

      it('removes the revocations of tokens that have expired, never one that does not expire', async () => {
        const never = { id: id(), appId: app.appId, expiresAt: null };
        const expired = { id: id(), appId: app.appId, expiresAt: T0 };
        const later = { id: id(), appId: app.appId, expiresAt: T0 + 10 };
        for (const revocation of [never, expired, later]) await store.revokedTokens.add(revocation);
        assert.equal(await store.revokedTokens.deleteExpired(T0 + 5, 100), 1);
        assert.deepEqual(
          (await store.revokedTokens.since(0, 10)).map((revocation) => revocation.id),
          [never.id, later.id],
        );
        const seqs = (await store.revokedTokens.since(0, 10)).map((revocation) => revocation.seq);
        await store.revokedTokens.deleteExpired(T0 + 10, 100);
        const newer = { id: id(), appId: app.appId, expiresAt: null };
        await store.revokedTokens.add(newer);
        const [added] = await store.revokedTokens.since(Math.max(...seqs), 10);
        assert.equal(added?.id, newer.id, 'a seq is never reused, even when the newest row was removed');
      });

      it("a revoke-all of anonymous tokens sets the cut-off and drops the app's revocations; of admin tokens, neither", async () => {
        const other = makeApp();
        await store.apps.insert(other);
        await store.revokedTokens.add({ id: id(), appId: app.appId, expiresAt: null });
        const kept = { id: id(), appId: other.appId, expiresAt: null };
        await store.revokedTokens.add(kept);
        await revokeAll(store, app.appId, 'admin', T0 + 1, noEvents);
        assert.equal((await store.apps.findById(app.appId))?.anonymousCutoff, null);
        assert.equal((await store.revokedTokens.since(0, 10)).length, 2);
        await revokeAll(store, app.appId, 'anonymous', T0 + 2, noEvents);
        assert.equal((await store.apps.findById(app.appId))?.anonymousCutoff, T0 + 2);
        assert.equal((await store.apps.findById(other.appId))?.anonymousCutoff, null);
        assert.deepEqual(
          (await store.revokedTokens.since(0, 10)).map((revocation) => revocation.id),
          [kept.id],
        );
        await revokeAll(store, app.appId, 'all', T0 + 3, noEvents);
        assert.equal((await store.apps.findById(app.appId))?.anonymousCutoff, T0 + 3);
      });

      it('sets no cut-off when the events of the revoke-all cannot be written', async () => {
        await assert.rejects(revokeAll(store, app.appId, 'anonymous', T0 + 2, () => [unwritableEvent(app.appId)]));
        assert.equal((await store.apps.findById(app.appId))?.anonymousCutoff, null);
      });

      it('deleting an app removes its revocations', async () => {
        await store.revokedTokens.add({ id: id(), appId: app.appId, expiresAt: null });
        await deleteApp(store, app.appId, () => []);
        assert.deepEqual(await store.revokedTokens.since(0, 10), []);
      });
    });

    describe('events', () => {
      const appId = 'events-app';

      it("lists an app's events newest first, every field as appended", async () => {
        const events = Array.from({ length: 5 }, (_, i) => makeEvent(appId, { at: T0 + i }));
        for (const event of events) await store.events.append([event]);
        await store.events.append([makeEvent('another-app')]);
        const listed = await store.events.list({ appId, limit: 10 });
        assert.deepEqual(
          listed.map(({ id: _id, ...event }) => event),
          [...events].reverse(),
        );
        const ids = listed.map((event) => event.id);
        assert.deepEqual(
          ids,
          [...ids].sort((a, b) => b - a),
        );
      });

      it('stores a keyed event once however often its batch is appended (a write tried again after a commit in doubt), and every unkeyed one', async () => {
        const keyed = (n: number) => ({ ...makeEvent(appId, { details: { n } }), idempotencyKey: newIdempotencyKey(T0 + n) });
        const first = [keyed(1), keyed(2)];
        await store.events.append(first);
        // Tried again with what was recorded meanwhile, and the events of a change (no key), twice.
        await store.events.append([...first, keyed(3), makeEvent(appId, { details: { n: 'change' } })]);
        await store.events.append([makeEvent(appId, { details: { n: 'change' } })]);
        const listed = await store.events.list({ appId, limit: 10 });
        assert.deepEqual(listed.map((event) => event.details.n).reverse(), [1, 2, 3, 'change', 'change']);
      });

      it('keeps the order of a batch of events', async () => {
        const events = Array.from({ length: 300 }, (_, i) => makeEvent(appId, { details: { n: i } }));
        await store.events.append(events);
        const listed = await store.events.list({ appId, limit: 500 });
        assert.deepEqual(
          listed.map((event) => event.details.n),
          events.map((_, i) => i).reverse(),
        );
      });

      it('pages with beforeId, filters by type, and follows with afterId', async () => {
        for (let i = 0; i < 7; i++) await store.events.append([makeEvent(appId, { type: i % 2 === 0 ? 'token.issued' : 'token.refused' })]);
        const all = await store.events.list({ appId, limit: 100 });
        const first = await store.events.list({ appId, limit: 3 });
        const second = await store.events.list({ appId, limit: 3, beforeId: first.at(-1)!.id });
        assert.deepEqual([...first, ...second], all.slice(0, 6));
        const refused = await store.events.list({ appId, limit: 100, type: 'token.refused' });
        assert.deepEqual(
          refused,
          all.filter((event) => event.type === 'token.refused'),
        );
        const after = await store.events.list({ appId, limit: 100, afterId: all[3]!.id });
        assert.deepEqual(after, all.slice(0, 3).reverse());
      });

      it('filters by a range of instants, a reason and a client address, alone and together, paging and following alike', async () => {
        const minute = (n: number) => T0 + n * 60_000;
        const refused = (n: number, clientAddress: string, reason: string, type: NewAuditEvent['type'] = 'token.refused') =>
          makeEvent(appId, { at: minute(n), type, principal: null, clientAddress, details: { reason, n } });
        await store.events.append([
          makeEvent(appId, { at: minute(0), clientAddress: '203.0.113.7', details: { n: 0 } }),
          refused(1, '203.0.113.7', 'invalid_client'),
          refused(2, '198.51.100.2', 'invalid_token'),
          refused(3, '2001:db8::1', 'address_not_allowed', 'credential.refused'),
          refused(4, '203.0.113.7', 'invalid_client'),
          makeEvent(appId, { at: minute(5), clientAddress: null, details: { n: 5, reasons: ['invalid_client'] } }),
          // Recorded late (a write tried again after an outage): a larger id, an earlier instant.
          refused(2, '203.0.113.7', 'invalid_client'),
        ]);
        await store.events.append([
          makeEvent('another-app', {
            at: minute(1),
            type: 'token.refused',
            clientAddress: '203.0.113.7',
            details: { reason: 'invalid_client' },
          }),
        ]);
        const listed = async (query: Omit<Parameters<Store['events']['list']>[0], 'appId' | 'limit'>, limit = 100) =>
          (await store.events.list({ appId, limit, ...query })).map((event) => event.details.n);

        assert.deepEqual(await listed({}), [2, 5, 4, 3, 2, 1, 0]);
        assert.deepEqual(await listed({ since: minute(1), until: minute(4) }), [2, 3, 2, 1], 'since included, until not');
        assert.deepEqual(await listed({ since: minute(4) }), [5, 4]);
        assert.deepEqual(await listed({ until: minute(1) }), [0]);
        assert.deepEqual(await listed({ since: minute(2), until: minute(2) + 1 }), [2, 2]);
        assert.deepEqual(
          await listed({ reason: 'invalid_client' }),
          [2, 4, 1],
          "details.reason only, not a list that holds it, nor another app's",
        );
        assert.deepEqual(await listed({ reason: 'invalid' }), [], 'the whole reason');
        assert.deepEqual(await listed({ clientAddress: '203.0.113.7' }), [2, 4, 1, 0]);
        assert.deepEqual(await listed({ clientAddress: '2001:db8::1' }), [3]);
        assert.deepEqual(await listed({ clientAddress: '203.0.113.70' }), [], 'the whole address');
        assert.deepEqual(await listed({ type: 'token.refused', reason: 'invalid_token' }), [2]);
        assert.deepEqual(
          await listed({ since: minute(1), until: minute(4), clientAddress: '203.0.113.7', reason: 'invalid_client' }),
          [2, 1],
        );
        assert.deepEqual(
          await listed({
            since: minute(2),
            until: minute(5),
            clientAddress: '203.0.113.7',
            type: 'token.refused',
            reason: 'invalid_client',
          }),
          [2, 4],
        );

        const all = await store.events.list({ appId, limit: 100 });
        const pages: unknown[] = [];
        let beforeId: number | undefined;
        for (;;) {
          const page = await store.events.list({
            appId,
            limit: 1,
            clientAddress: '203.0.113.7',
            ...(beforeId === undefined ? {} : { beforeId }),
          });
          if (page.length === 0) break;
          pages.push(page[0]!.details.n);
          beforeId = page[0]!.id;
        }
        assert.deepEqual(pages, [2, 4, 1, 0]);
        const after = await store.events.list({
          appId,
          limit: 100,
          afterId: all.at(-1)!.id,
          clientAddress: '203.0.113.7',
          since: minute(1),
        });
        assert.deepEqual(
          after.map((event) => event.details.n),
          [1, 4, 2],
          'oldest first',
        );
      });

      it("finds an app's newest events of a type of change, newest first, among any number of token events, and no other app's", async () => {
        const changed = 'changes-app';
        const newest = async (appId: string, type: ChangeEventType, limit = 1) =>
          (await store.events.lastChanges(appId, type, limit)).map((event) => event.details.n);
        assert.deepEqual(await newest(changed, 'app.secret_exposed'), []);
        await store.events.append([
          makeEvent(changed, { type: 'app.secret_exposed', details: { n: 1 } }),
          ...Array.from({ length: 50 }, () => makeEvent(changed, { type: 'token.issued' })),
          makeEvent(changed, { type: 'app.secret_rotated', details: { n: 2 } }),
          makeEvent(changed, { type: 'app.secret_exposed', details: { n: 3 } }),
          ...Array.from({ length: 50 }, () => makeEvent(changed, { type: 'token.refused', principal: null })),
          makeEvent('another-app', { type: 'app.secret_exposed', details: { n: 4 } }),
        ]);
        const [exposed] = await store.events.lastChanges(changed, 'app.secret_exposed', 1);
        assert.equal(exposed?.appId, changed);
        assert.equal(exposed?.type, 'app.secret_exposed');
        assert.deepEqual(await newest(changed, 'app.secret_exposed'), [3]);
        assert.deepEqual(await newest(changed, 'app.secret_exposed', 10), [3, 1]);
        assert.deepEqual(await newest(changed, 'app.secret_rotated'), [2]);
        assert.deepEqual(await newest(changed, 'app.owner_changed'), []);
        assert.deepEqual(await newest('another-app', 'app.secret_exposed'), [4]);
      });

      it('trims an app to its newest events of each class, in batches, never one of the other class', async () => {
        // Interleaved: 12 audit events and 12 refusals, oldest first.
        for (let i = 0; i < 12; i++) {
          await store.events.append([makeEvent(appId, { details: { n: i } })]);
          await store.events.append([
            makeEvent(appId, { type: 'token.refused', principal: null, details: { reason: 'invalid_token', n: i } }),
          ]);
        }
        await store.events.append([makeEvent('another-app'), makeEvent('another-app', { type: 'token.refused' })]);
        const kept = async (type: 'token.issued' | 'token.refused') =>
          (await store.events.list({ appId, type, limit: 100 })).map((event) => event.details.n);

        assert.equal(await store.events.trimApp(appId, 'refusal', 3, 4), 4);
        assert.equal(await store.events.trimApp(appId, 'refusal', 3, 4), 4);
        assert.equal(await store.events.trimApp(appId, 'refusal', 3, 4), 1);
        assert.equal(await store.events.trimApp(appId, 'refusal', 3, 4), 0);
        assert.deepEqual(await kept('token.refused'), [11, 10, 9]);
        assert.equal((await kept('token.issued')).length, 12, 'trimming refusals removed audit events');

        assert.equal(await store.events.trimApp(appId, 'audit', 5, 4), 4);
        assert.equal(await store.events.trimApp(appId, 'audit', 5, 4), 3);
        assert.equal(await store.events.trimApp(appId, 'audit', 5, 4), 0);
        assert.deepEqual(await kept('token.issued'), [11, 10, 9, 8, 7]);
        assert.deepEqual(await kept('token.refused'), [11, 10, 9]);
        assert.equal((await store.events.list({ appId: 'another-app', limit: 10 })).length, 2);
      });

      it('deletes events recorded before a time, oldest first, in batches', async () => {
        for (let i = 0; i < 6; i++) await store.events.append([makeEvent(appId, { at: T0 + i * 1000 })]);
        assert.equal(await store.events.deleteOlderThan(T0 + 3000, 2), 2);
        assert.equal(await store.events.deleteOlderThan(T0 + 3000, 2), 1);
        assert.equal(await store.events.deleteOlderThan(T0 + 3000, 2), 0);
        const kept = await store.events.list({ appId, limit: 10 });
        assert.deepEqual(
          kept.map((event) => event.at),
          [T0 + 5000, T0 + 4000, T0 + 3000],
        );
      });
    });

    describe('event counts', () => {
      const appId = 'counted-app';
      const MINUTE = 60_000;
      const HOUR = 3_600_000;
      /** The start of a UTC day. */
      const DAY0 = T0 - (T0 % 86_400_000);
      const issued = (bucket: number, count: number, appIdOf = appId): EventCount => ({
        appId: appIdOf,
        bucket,
        type: 'token.issued',
        principal: 'anonymous',
        reason: null,
        count,
      });
      const refused = (bucket: number, count: number, principal: EventCount['principal'], reason: string): EventCount => ({
        appId,
        bucket,
        type: 'token.refused',
        principal,
        reason,
        count,
      });
      const list = (bucketMs: number, since = DAY0, until = DAY0 + 2 * 86_400_000, type?: EventCount['type']) =>
        store.events.listCounts({ appId, bucketMs, since, until, ...(type === undefined ? {} : { type }) });

      it('adds counts to the stored ones of the same app, minute, type, principal and reason', async () => {
        await store.events.addCounts([
          issued(DAY0, 3),
          refused(DAY0, 2, 'admin', 'invalid_client'),
          refused(DAY0, 1, null, 'invalid_token'),
        ]);
        await store.events.addCounts([issued(DAY0, 4), refused(DAY0, 5, 'admin', 'invalid_client'), issued(DAY0 + MINUTE, 1)]);
        await store.events.addCounts([issued(DAY0, 100, 'another-app')]);
        // By minute, type, principal ('' for none first) and reason.
        assert.deepEqual(await list(MINUTE), [
          issued(DAY0, 7),
          refused(DAY0, 1, null, 'invalid_token'),
          refused(DAY0, 7, 'admin', 'invalid_client'),
          issued(DAY0 + MINUTE, 1),
        ]);
      });

      it('adds the counts of a large batch, and of batches written at once', async () => {
        const minutes = Array.from({ length: 1000 }, (_, i) => issued(DAY0 + i * MINUTE, i + 1));
        await store.events.addCounts(minutes);
        await Promise.all(Array.from({ length: 10 }, () => store.events.addCounts([issued(DAY0, 1), issued(DAY0 + MINUTE, 2)])));
        const listed = await list(MINUTE);
        assert.equal(listed.length, 1000);
        assert.deepEqual(listed.slice(0, 3), [issued(DAY0, 11), issued(DAY0 + MINUTE, 22), issued(DAY0 + 2 * MINUTE, 3)]);
        assert.equal(
          listed.reduce((sum, row) => sum + row.count, 0),
          (1000 * 1001) / 2 + 30,
        );
      });

      it('lists the sums per hour or per day, from since to before until, optionally of one type', async () => {
        await store.events.addCounts([
          issued(DAY0 + 5 * MINUTE, 1),
          issued(DAY0 + 59 * MINUTE, 2),
          issued(DAY0 + HOUR, 4),
          refused(DAY0 + HOUR + MINUTE, 8, 'anonymous', 'invalid_client'),
          issued(DAY0 + 25 * HOUR, 16),
        ]);
        assert.deepEqual(await list(HOUR), [
          issued(DAY0, 3),
          issued(DAY0 + HOUR, 4),
          refused(DAY0 + HOUR, 8, 'anonymous', 'invalid_client'),
          issued(DAY0 + 25 * HOUR, 16),
        ]);
        assert.deepEqual(await list(86_400_000), [
          issued(DAY0, 7),
          refused(DAY0, 8, 'anonymous', 'invalid_client'),
          issued(DAY0 + 86_400_000, 16),
        ]);
        // until is exclusive; a minute that starts before it is in.
        assert.deepEqual(await list(HOUR, DAY0 + HOUR, DAY0 + HOUR + MINUTE), [issued(DAY0 + HOUR, 4)]);
        assert.deepEqual(await list(HOUR, DAY0 + HOUR, DAY0 + HOUR + MINUTE + 1), [
          issued(DAY0 + HOUR, 4),
          refused(DAY0 + HOUR, 8, 'anonymous', 'invalid_client'),
        ]);
        assert.deepEqual(await list(HOUR, DAY0, DAY0 + 2 * HOUR, 'token.refused'), [
          refused(DAY0 + HOUR, 8, 'anonymous', 'invalid_client'),
        ]);
        assert.deepEqual(
          await store.events.listCounts({ appId: 'unknown-app', bucketMs: HOUR, since: DAY0, until: DAY0 + 86_400_000 }),
          [],
        );
      });

      it('deletes the counts of minutes before a time, in batches', async () => {
        await store.events.addCounts(Array.from({ length: 7 }, (_, i) => issued(DAY0 + i * MINUTE, 1)));
        await store.events.addCounts([refused(DAY0, 1, null, 'invalid_token')]);
        assert.equal(await store.events.deleteCountsOlderThan(DAY0 + 4 * MINUTE, 3), 3);
        assert.equal(await store.events.deleteCountsOlderThan(DAY0 + 4 * MINUTE, 3), 2);
        assert.equal(await store.events.deleteCountsOlderThan(DAY0 + 4 * MINUTE, 3), 0);
        assert.deepEqual(await list(MINUTE), [issued(DAY0 + 4 * MINUTE, 1), issued(DAY0 + 5 * MINUTE, 1), issued(DAY0 + 6 * MINUTE, 1)]);
      });

      it('adds a batch of counts once, however often it is written: the writer’s batches are added in turn', async () => {
        const batch = (writer: string, number: number) => ({ writer, number, at: T0 });
        await store.events.addCounts([issued(DAY0, 1), refused(DAY0, 2, 'admin', 'invalid_client')], batch('writer-1', 1));
        // Written again (its first write's commit was in doubt): nothing added.
        await store.events.addCounts([issued(DAY0, 1), refused(DAY0, 2, 'admin', 'invalid_client')], batch('writer-1', 1));
        await store.events.addCounts([issued(DAY0, 4)], batch('writer-1', 2));
        await store.events.addCounts([issued(DAY0, 4)], batch('writer-1', 2));
        // An earlier batch, once a later one was added: not added either.
        await store.events.addCounts([issued(DAY0, 1)], batch('writer-1', 1));
        // Another writer's batches are its own, numbered from 1.
        await store.events.addCounts([issued(DAY0, 8)], batch('writer-2', 1));
        // Without a batch (an earlier release during an upgrade; tools): added every time.
        await store.events.addCounts([issued(DAY0, 16)]);
        assert.deepEqual(await list(MINUTE), [issued(DAY0, 29), refused(DAY0, 2, 'admin', 'invalid_client')]);
        assert.deepEqual(await list(HOUR), [issued(DAY0, 29), refused(DAY0, 2, 'admin', 'invalid_client')], 'and the hours once');
      });

      it('adds the batches of writers writing at once, and the same batch written twice at once once', async () => {
        const writers = Array.from({ length: 8 }, (_, i) => `writer-${i}`);
        await Promise.all(
          writers.flatMap((writer) => [
            store.events.addCounts([issued(DAY0, 1), issued(DAY0 + MINUTE, 2)], { writer, number: 1, at: T0 }),
            store.events.addCounts([issued(DAY0, 1), issued(DAY0 + MINUTE, 2)], { writer, number: 1, at: T0 }),
          ]),
        );
        assert.deepEqual(await list(MINUTE), [issued(DAY0, 8), issued(DAY0 + MINUTE, 16)]);
      });

      it('deletes the writers of counts not written since a time, in batches: one deleted adds its next batch anew', async () => {
        for (let i = 0; i < 5; i++) await store.events.addCounts([issued(DAY0, 1)], { writer: `writer-${i}`, number: 1, at: T0 + i });
        assert.equal(await store.events.deleteCountWritersOlderThan(T0 + 3, 2), 2);
        assert.equal(await store.events.deleteCountWritersOlderThan(T0 + 3, 2), 1);
        assert.equal(await store.events.deleteCountWritersOlderThan(T0 + 3, 2), 0);
        // writer-3 is remembered: its batch 1 again is not added; writer-0 is forgotten: its batch 2 is.
        await store.events.addCounts([issued(DAY0, 1)], { writer: 'writer-3', number: 1, at: T0 + 10 });
        await store.events.addCounts([issued(DAY0, 1)], { writer: 'writer-0', number: 2, at: T0 + 10 });
        assert.deepEqual(await list(MINUTE), [issued(DAY0, 6)]);
        // writer-3's batch again wrote nothing, nor said when: it goes with writer-4.
        assert.equal(await store.events.deleteCountWritersOlderThan(T0 + 10, 1000), 2);
        assert.equal(await store.events.deleteCountWritersOlderThan(T0 + 11, 1000), 1, 'writer-0');
      });

      it("deletes the counts of a deleted app, and no other app's", async () => {
        const app = makeApp();
        const other = makeApp();
        await store.apps.insert(app);
        await store.apps.insert(other);
        await store.events.addCounts([issued(DAY0, 5, app.appId), issued(DAY0, 6, other.appId)]);
        assert.equal(await deleteApp(store, app.appId, () => []), true);
        const countsOf = (id: string) => store.events.listCounts({ appId: id, bucketMs: MINUTE, since: DAY0, until: DAY0 + MINUTE });
        assert.deepEqual(await countsOf(app.appId), []);
        assert.deepEqual(await countsOf(other.appId), [issued(DAY0, 6, other.appId)]);
      });
    });

    developerStoreSuite(() => store);

    describe('onChange: a change made through another connection', () => {
      let second: Store;
      let app: AppRecord;
      let calls: { appId: string | undefined; at: number }[];

      beforeEach(async () => {
        app = makeApp();
        await store.apps.insert(app);
        calls = [];
        store.onChange((change) => calls.push({ appId: changedApp(change), at: Date.now() }));
        second = await openSecondConnection(testStore);
        // Let any notification caused by opening the second connection pass, so that only the
        // change under test can satisfy the assertion.
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      });
      afterEach(async () => {
        await second.close();
      });

      /** Resolves once the listener was called with a change `matches` after `since`. */
      async function noticed(matches: (call: { appId: string | undefined }) => boolean, since: number): Promise<void> {
        const deadline = since + CHANGE_DEADLINE_MS;
        while (!calls.some((call) => call.at >= since && matches(call))) {
          if (Date.now() > deadline)
            assert.fail(`onChange was not called within ${CHANGE_DEADLINE_MS} ms (calls: ${JSON.stringify(calls)})`);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      }

      /** Resolves once the listener was called about `appId` (or about every app) after `since`. */
      async function noticedWithin(appId: string, since: number): Promise<void> {
        const deadline = since + CHANGE_DEADLINE_MS;
        const relevant = () => calls.some((call) => call.at >= since && (call.appId === undefined || call.appId === appId));
        while (!relevant()) {
          if (Date.now() > deadline) {
            assert.fail(`onChange was not called about ${appId} within ${CHANGE_DEADLINE_MS} ms (calls: ${JSON.stringify(calls)})`);
          }
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      }

      it('is noticed when an app is created', async () => {
        const created = makeApp();
        const since = Date.now();
        await second.apps.insert(created);
        await noticedWithin(created.appId, since);
        assert.deepEqual(await store.apps.findById(created.appId), created);
      });

      it('is noticed when a ClientSecret is rotated', async () => {
        const rotated = randomBytes(32);
        const since = Date.now();
        assert.deepEqual(
          await rotateClientSecret(second, app.appId, rotated, { revokeAdminTokens: false, previousSecretValidUntil: null }, noEvents),
          { adminTokensRevoked: 0 },
        );
        await noticedWithin(app.appId, since);
        assert.ok((await store.apps.findById(app.appId))?.clientSecretHash.equals(rotated));
      });

      it('is noticed when a ClientSecret is rotated with a grace period, the previous one read with it', async () => {
        const before = (await store.apps.findById(app.appId))!.clientSecretHash;
        const rotated = randomBytes(32);
        const since = Date.now();
        await rotateClientSecret(second, app.appId, rotated, { revokeAdminTokens: false, previousSecretValidUntil: T0 + 60_000 }, noEvents);
        await noticedWithin(app.appId, since);
        const found = await store.apps.findById(app.appId);
        assert.ok(found?.clientSecretHash.equals(rotated));
        assert.deepEqual(found?.previousSecret, { hash: before, validUntil: T0 + 60_000 });
      });

      it('is noticed when a credential is created, rotated or revoked, not when its last use is written', async () => {
        const credential = makeCredential(app.appId);
        let since = Date.now();
        await second.credentials.insert(credential);
        await noticedWithin(app.appId, since);
        assert.deepEqual((await store.apps.findById(app.appId))?.credentials, [credential]);
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        since = Date.now();
        await second.credentials.rotate(app.appId, credential.clientId, randomBytes(32), null);
        await noticedWithin(app.appId, since);
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        since = Date.now();
        await second.credentials.delete(app.appId, credential.clientId);
        await noticedWithin(app.appId, since);
        assert.deepEqual((await store.apps.findById(app.appId))?.credentials, []);
        if (store.backend === 'postgres') {
          // SQLite's change poll hears every commit elsewhere; PostgreSQL's trigger names what changes.
          await second.credentials.insert(makeCredential(app.appId, { clientId: 'tcl_00000000000000000000000f' }));
          await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
          since = Date.now();
          await second.credentials.markUsed('tcl_00000000000000000000000f', T0, 60_000);
          await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
          assert.deepEqual(
            calls.filter((call) => call.at >= since),
            [],
          );
        }
      });

      it('is noticed when a configuration is changed', async () => {
        const since = Date.now();
        await updateConfiguration(second, app.appId, { requireAppKey: true }, noEvents);
        await noticedWithin(app.appId, since);
      });

      it('is noticed when a token is revoked, and when all tokens of an app are', async () => {
        const token = makeToken(app.appId);
        await second.tokens.insert(token, 0);
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        let since = Date.now();
        assert.equal(await second.tokens.delete(token.selector), true);
        await noticedWithin(app.appId, since);
        await second.tokens.insert(makeToken(app.appId, { kind: 'admin' }), 0);
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        since = Date.now();
        assert.equal(await revokeAll(second, app.appId, 'admin', T0, noEvents), 1);
        await noticedWithin(app.appId, since);
      });

      it('is noticed when a single anonymous token is revoked, and when a key is added or retired', async () => {
        let since = Date.now();
        await second.revokedTokens.add({ id: randomBytes(16).toString('latin1'), appId: app.appId, expiresAt: null });
        await noticed((call) => call.appId === undefined || call.appId === 'revocations', since);
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        since = Date.now();
        const key = await second.signingKeys.add(randomBytes(32), T0);
        await noticed((call) => call.appId === undefined, since);
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        since = Date.now();
        await second.signingKeys.retire(key.id, T0 + 1);
        await noticed((call) => call.appId === undefined, since);
      });

      it('is noticed when an app is deleted', async () => {
        const since = Date.now();
        assert.equal(await deleteApp(second, app.appId, () => []), true);
        await noticedWithin(app.appId, since);
        assert.equal(await store.apps.findById(app.appId), undefined);
      });
    });
  });
}
