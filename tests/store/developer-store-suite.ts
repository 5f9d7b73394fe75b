import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { DeletedApp } from '../../src/apps/store.js';
import { StoreConflictError } from 'tessera-tokens/internal/transaction.js';
import type { AccountAudit, NewDeveloperEvent } from '../../src/developers/events.js';
import { MAX_EVENTS_PER_DEVELOPER } from '../../src/developers/events.js';
import type { Store } from '../../src/store/store.js';
import { makeApp, makeDeveloper, makeEvent, makeInvitation, makePasswordLink, makeSession, makeToken, T0 } from '../helpers/fixtures.js';
import {
  acceptInvitation,
  deleteApp,
  deleteLink,
  deleteSession,
  disableDeveloper,
  insertDeveloper,
  insertLink,
  insertOwned,
  insertSession,
  removeMember,
  setOwner,
  setPassword,
} from '../helpers/composed.js';

/** An audit builder for changes whose events a test does not look at. */
const none = (): AccountAudit => ({});

function developerEvent(developerId: string, overrides: Partial<NewDeveloperEvent> = {}): NewDeveloperEvent {
  return { type: 'developer.signed_in', developerId, at: T0, actor: 'developer', clientAddress: '198.51.100.7', details: {}, ...overrides };
}

/** Events both backends refuse to write (`type` is NOT NULL): the change they come with must not happen either. */
const unwritable = (developerId: string): AccountAudit => ({
  developer: [developerEvent(developerId, { type: null as unknown as NewDeveloperEvent['type'] })],
});

/**
 * The behaviour of `Store.developers` every backend must have: part of the shared store suite
 * (`store-suite.ts` calls it inside its own describe, with the fresh store of each test).
 */
export function developerStoreSuite(current: () => Store): void {
  const store = () => current().developers;

  /** An enabled developer, stored. */
  const stored = async (overrides: Parameters<typeof makeDeveloper>[0] = {}) => {
    const developer = makeDeveloper(overrides);
    await insertDeveloper(current(), developer, null, none);
    return developer;
  };
  const storedApp = async () => {
    const app = makeApp();
    await current().apps.insert(app);
    return app;
  };

  describe('developer accounts', () => {
    it('finds an inserted developer by id and by email, every field as inserted, and lists them oldest first', async () => {
      const second = makeDeveloper({ createdAt: T0 + 2000, disabledAt: T0 + 3000 });
      const first = makeDeveloper({ createdAt: T0 + 1000, passwordHash: null });
      await insertDeveloper(current(), second, null, none);
      await insertDeveloper(current(), first, null, none);
      assert.deepEqual(await store().accounts.findById(first.id), first);
      assert.deepEqual(await store().accounts.findByEmail(second.email), second);
      assert.equal(await store().accounts.findById(randomBytes(8).toString('hex')), undefined);
      assert.equal(await store().accounts.findByEmail('nobody@example.com'), undefined);
      assert.deepEqual(await store().accounts.list(), [first, second]);
    });

    it('refuses a taken email or id, keeping the existing developer, and stores nothing of the refused one', async () => {
      const developer = await stored();
      const sameEmail = makeDeveloper({ email: developer.email });
      const link = makePasswordLink(sameEmail.id, { purpose: 'set_password' });
      await assert.rejects(insertDeveloper(current(), sameEmail, link, none), StoreConflictError);
      await assert.rejects(insertDeveloper(current(), makeDeveloper({ id: developer.id }), null, none), StoreConflictError);
      assert.deepEqual(await store().accounts.list(), [developer]);
      assert.equal(await store().links.findById(link.id), undefined);
    });

    it('inserts a developer with its set-password link and its events in one transaction: all, or none', async () => {
      const developer = makeDeveloper({ passwordHash: null });
      const link = makePasswordLink(developer.id, { purpose: 'set_password' });
      await insertDeveloper(current(), developer, link, () => ({
        developer: [developerEvent(developer.id, { type: 'developer.created', actor: 'operator', clientAddress: null })],
      }));
      assert.deepEqual(await store().links.findById(link.id), link);
      const [created] = await store().accounts.listEvents(developer.id, 10);
      assert.deepEqual(
        { ...created, id: 0 },
        { ...developerEvent(developer.id, { type: 'developer.created', actor: 'operator', clientAddress: null }), id: 0 },
      );

      const failed = makeDeveloper();
      const failedLink = makePasswordLink(failed.id, { purpose: 'set_password' });
      await assert.rejects(insertDeveloper(current(), failed, failedLink, () => unwritable(failed.id)));
      assert.equal(await store().accounts.findById(failed.id), undefined);
      assert.equal(await store().links.findById(failedLink.id), undefined);
    });

    it('sets a password, ending every session of that developer only, with its events', async () => {
      const developer = await stored();
      const other = await stored();
      for (const id of [developer.id, developer.id, other.id]) await insertSession(current(), makeSession(id), none);
      const set = await setPassword(current(), developer.id, 'new-hash', { linkId: null }, ({ sessionsEnded }) => ({
        developer: [developerEvent(developer.id, { type: 'developer.password_set', details: { sessionsEnded } })],
      }));
      assert.deepEqual(set, { sessionsEnded: 2 });
      assert.equal((await store().accounts.findById(developer.id))?.passwordHash, 'new-hash');
      assert.equal(await store().sessions.countOf(developer.id, T0), 0);
      assert.equal(await store().sessions.countOf(other.id, T0), 1);
      assert.deepEqual(
        (await store().accounts.listEvents(developer.id, 10)).map((event) => [event.type, event.details]),
        [['developer.password_set', { sessionsEnded: 2 }]],
      );
      assert.equal(await setPassword(current(), randomBytes(8).toString('hex'), 'x', { linkId: null }, none), undefined);
    });

    it('removes every password link of the developer when its password is set otherwise (a change), in the same transaction', async () => {
      const developer = await stored();
      const other = await stored();
      const link = makePasswordLink(developer.id);
      const othersLink = makePasswordLink(other.id);
      const invitation = makeInvitation((await storedApp()).appId, developer.email);
      for (const made of [link, othersLink, invitation]) await insertLink(current(), made, none);
      await assert.rejects(setPassword(current(), developer.id, 'unwritten', { linkId: null }, () => unwritable(developer.id)));
      assert.deepEqual(await store().links.findById(link.id), link, 'kept by a change that did not happen');
      assert.deepEqual(await setPassword(current(), developer.id, 'changed', { linkId: null }, none), { sessionsEnded: 0 });
      assert.equal(await store().links.findById(link.id), undefined);
      assert.equal(await setPassword(current(), developer.id, 'through the old link', { linkId: link.id }, none), undefined);
      assert.equal((await store().accounts.findById(developer.id))?.passwordHash, 'changed');
      assert.deepEqual(await store().links.findById(othersLink.id), othersLink);
      assert.deepEqual(await store().links.findById(invitation.id), invitation);
    });

    it('sets a password through a link only once, and only through a password link of that developer', async () => {
      const developer = await stored();
      const other = await stored();
      const link = makePasswordLink(developer.id);
      const othersLink = makePasswordLink(other.id);
      await insertLink(current(), link, none);
      await insertLink(current(), othersLink, none);
      const app = await storedApp();
      const invitation = makeInvitation(app.appId, developer.email);
      await insertLink(current(), invitation, none);

      assert.equal(await setPassword(current(), developer.id, 'via-other', { linkId: othersLink.id }, none), undefined);
      assert.equal(await setPassword(current(), developer.id, 'via-invitation', { linkId: invitation.id }, none), undefined);
      assert.deepEqual(await setPassword(current(), developer.id, 'first', { linkId: link.id }, none), { sessionsEnded: 0 });
      assert.equal(await setPassword(current(), developer.id, 'second', { linkId: link.id }, none), undefined);
      assert.equal((await store().accounts.findById(developer.id))?.passwordHash, 'first');
      assert.equal(await store().links.findById(link.id), undefined);
      assert.deepEqual(await store().links.findById(othersLink.id), othersLink);
      assert.deepEqual(await store().links.findById(invitation.id), invitation);
    });

    it('uses up a link at most once when two requests use it at the same moment', async () => {
      const developer = await stored();
      const link = makePasswordLink(developer.id);
      await insertLink(current(), link, none);
      const results = await Promise.all(
        ['a', 'b', 'c', 'd'].map((hash) => setPassword(current(), developer.id, hash, { linkId: link.id }, none)),
      );
      assert.equal(results.filter((result) => result !== undefined).length, 1);
    });

    it('sets no password of a disabled developer, whose links are gone, and makes it no new link', async () => {
      const developer = await stored();
      const link = makePasswordLink(developer.id);
      await insertLink(current(), link, none);
      await disableDeveloper(current(), developer.id, T0, none);
      assert.equal(await store().links.findById(link.id), undefined);
      assert.equal(await setPassword(current(), developer.id, 'x', { linkId: null }, none), undefined);
      assert.equal((await store().accounts.findById(developer.id))?.passwordHash, developer.passwordHash);
      assert.equal(await insertLink(current(), makePasswordLink(developer.id), none), undefined, 'no link for a disabled developer');
    });

    it('undoes a password change whose events cannot be written', async () => {
      const developer = await stored();
      const link = makePasswordLink(developer.id);
      await insertLink(current(), link, none);
      await insertSession(current(), makeSession(developer.id), none);
      await assert.rejects(setPassword(current(), developer.id, 'x', { linkId: link.id }, () => unwritable(developer.id)));
      assert.equal((await store().accounts.findById(developer.id))?.passwordHash, developer.passwordHash);
      assert.deepEqual(await store().links.findById(link.id), link);
      assert.equal(await store().sessions.countOf(developer.id, T0), 1);
    });

    it('replaces a hash made with older parameters only if it is still the stored one', async () => {
      const developer = await stored();
      assert.equal(await store().accounts.rehashPassword(developer.id, 'not-the-hash', 'new'), undefined);
      assert.equal(await store().accounts.rehashPassword(developer.id, developer.passwordHash!, 'new'), true);
      assert.equal((await store().accounts.findById(developer.id))?.passwordHash, 'new');
    });

    it('disables a developer once: sessions ended, password links removed, invitations to others kept', async () => {
      const developer = await stored();
      const app = await storedApp();
      await insertSession(current(), makeSession(developer.id), none);
      await insertSession(current(), makeSession(developer.id), none);
      const link = makePasswordLink(developer.id);
      await insertLink(current(), link, none);
      const invitation = makeInvitation(app.appId, developer.email);
      await insertLink(current(), invitation, none);
      const disabled = await disableDeveloper(current(), developer.id, T0 + 5, ({ sessionsEnded }) => ({
        developer: [developerEvent(developer.id, { type: 'developer.disabled', actor: 'operator', details: { sessionsEnded } })],
      }));
      assert.deepEqual(disabled, { sessionsEnded: 2 });
      assert.equal((await store().accounts.findById(developer.id))?.disabledAt, T0 + 5);
      assert.equal(await store().links.findById(link.id), undefined);
      assert.deepEqual(await store().links.findById(invitation.id), invitation);
      assert.equal(await disableDeveloper(current(), developer.id, T0 + 6, none), undefined, 'disabled already');
      assert.equal((await store().accounts.findById(developer.id))?.disabledAt, T0 + 5);
      assert.equal(await insertSession(current(), makeSession(developer.id), none), undefined, 'no new session');
      assert.deepEqual(
        (await store().accounts.listEvents(developer.id, 10)).map((event) => event.type),
        ['developer.disabled'],
      );
    });

    it('deletes a developer with its sessions, links, memberships and events; its apps stay, without it', async () => {
      const developer = await stored();
      const other = await stored();
      const owned = await storedApp();
      const joined = await storedApp();
      await setOwner(current(), owned.appId, developer.id, T0, none);
      await setOwner(current(), joined.appId, other.id, T0, none);
      const invitation = makeInvitation(joined.appId, developer.email);
      await insertLink(current(), invitation, none);
      await acceptInvitation(current(), invitation.id, developer.id, T0, none);
      const session = makeSession(developer.id);
      await insertSession(current(), session, () => ({ developer: [developerEvent(developer.id)] }));
      const link = makePasswordLink(developer.id);
      await insertLink(current(), link, none);
      const theirInvitation = makeInvitation(owned.appId, 'someone@example.com', { invitedBy: developer.id });
      await insertLink(current(), theirInvitation, none);

      assert.equal(await store().accounts.delete(developer.id), true);
      assert.equal(await store().accounts.delete(developer.id), undefined);
      assert.equal(await store().accounts.findById(developer.id), undefined);
      assert.equal(await store().sessions.findById(session.id), undefined);
      assert.equal(await store().links.findById(link.id), undefined);
      assert.equal(await store().links.findById(theirInvitation.id), undefined);
      assert.deepEqual(await store().members.ofDeveloper(developer.id), []);
      assert.deepEqual(await store().members.ofApp(owned.appId), []);
      assert.deepEqual(
        (await store().members.ofApp(joined.appId)).map((member) => member.developerId),
        [other.id],
      );
      assert.deepEqual(await store().accounts.listEvents(developer.id, 10), []);
      assert.ok(await current().apps.findById(owned.appId));
    });

    it('lists account events newest first and keeps each developer\u2019s newest ones only', async () => {
      const developer = await stored();
      const other = await stored();
      await insertSession(current(), makeSession(other.id), () => ({ developer: [developerEvent(other.id, { details: { n: -1 } })] }));
      const many = Array.from({ length: MAX_EVENTS_PER_DEVELOPER + 5 }, (_, n) =>
        developerEvent(developer.id, { at: T0 + n, details: { n } }),
      );
      await insertSession(current(), makeSession(developer.id), () => ({ developer: many }));
      const listed = await store().accounts.listEvents(developer.id, 2 * MAX_EVENTS_PER_DEVELOPER);
      assert.equal(listed.length, MAX_EVENTS_PER_DEVELOPER);
      assert.deepEqual(
        listed.slice(0, 2).map((event) => event.details.n),
        [MAX_EVENTS_PER_DEVELOPER + 4, MAX_EVENTS_PER_DEVELOPER + 3],
      );
      assert.equal(listed.at(-1)?.details.n, 5);
      assert.ok(listed.every((event, index) => index === 0 || event.id < listed[index - 1]!.id));
      assert.deepEqual(
        (await store().accounts.listEvents(other.id, 10)).map((event) => event.details.n),
        [-1],
      );
      assert.equal((await store().accounts.listEvents(developer.id, 3)).length, 3);
    });

    it('appends account events that go with no change, keeping each developer\u2019s newest ones only', async () => {
      const developer = await stored();
      await store().accounts.appendEvents([
        developerEvent(developer.id, { type: 'developer.limit_reached', details: { limit: 'owned_apps' } }),
      ]);
      assert.deepEqual(
        (await store().accounts.listEvents(developer.id, 10)).map((event) => [event.type, event.details]),
        [['developer.limit_reached', { limit: 'owned_apps' }]],
      );
      const many = Array.from({ length: MAX_EVENTS_PER_DEVELOPER }, (_, n) => developerEvent(developer.id, { details: { n } }));
      await store().accounts.appendEvents(many);
      const listed = await store().accounts.listEvents(developer.id, 2 * MAX_EVENTS_PER_DEVELOPER);
      assert.equal(listed.length, MAX_EVENTS_PER_DEVELOPER);
      assert.equal(listed.at(-1)?.details.n, 0);
    });

    it('removes account events older than a cutoff, in batches', async () => {
      const developer = await stored();
      const events = [T0 - 3, T0 - 2, T0 - 1, T0, T0 + 1].map((at) => developerEvent(developer.id, { at }));
      await insertSession(current(), makeSession(developer.id), () => ({ developer: events }));
      assert.equal(await store().accounts.deleteEventsOlderThan(T0, 2), 2);
      assert.equal(await store().accounts.deleteEventsOlderThan(T0, 2), 1);
      assert.equal(await store().accounts.deleteEventsOlderThan(T0, 2), 0);
      assert.deepEqual(
        (await store().accounts.listEvents(developer.id, 10)).map((event) => event.at),
        [T0 + 1, T0],
      );
    });
  });

  describe('developer sessions', () => {
    it('finds an inserted session, every field as inserted, writes its last-seen time, and ends it once', async () => {
      const developer = await stored();
      const session = makeSession(developer.id, { secretHash: Buffer.from([0, 255, 0, ...randomBytes(28), 0]) });
      assert.equal(await insertSession(current(), session, () => ({ developer: [developerEvent(developer.id)] })), true);
      const found = await store().sessions.findById(session.id);
      assert.deepEqual(found, session);
      assert.ok(Buffer.isBuffer(found?.secretHash));
      await store().sessions.touch(session.id, T0 + 60_000, T0 + 31 * 60_000);
      assert.deepEqual(await store().sessions.findById(session.id), { ...session, lastSeenAt: T0 + 60_000, expiresAt: T0 + 31 * 60_000 });
      assert.equal(
        await deleteSession(current(), session.id, () => ({ developer: [developerEvent(developer.id, { type: 'developer.signed_out' })] })),
        true,
      );
      assert.equal(await deleteSession(current(), session.id, () => unwritable(developer.id)), false, 'nothing to end, nothing written');
      assert.equal(await store().sessions.findById(session.id), undefined);
      assert.deepEqual(
        (await store().accounts.listEvents(developer.id, 10)).map((event) => event.type),
        ['developer.signed_out', 'developer.signed_in'],
      );
    });

    it('starts no session for an unknown developer, nor one whose events cannot be written', async () => {
      assert.equal(await insertSession(current(), makeSession(randomBytes(8).toString('hex')), none), undefined);
      const developer = await stored();
      const session = makeSession(developer.id);
      await assert.rejects(insertSession(current(), session, () => unwritable(developer.id)));
      assert.equal(await store().sessions.findById(session.id), undefined);
    });

    it('counts a developer\u2019s live sessions and removes expired ones in batches', async () => {
      const developer = await stored();
      const expired = [T0 - 2, T0 - 1, T0].map((expiresAt) => makeSession(developer.id, { expiresAt }));
      const live = makeSession(developer.id, { expiresAt: T0 + 1 });
      for (const session of [...expired, live]) await insertSession(current(), session, none);
      assert.equal(await store().sessions.countOf(developer.id, T0), 1);
      assert.equal(await store().sessions.deleteExpired(T0, 2), 2);
      assert.equal(await store().sessions.deleteExpired(T0, 2), 1);
      assert.equal(await store().sessions.deleteExpired(T0, 2), 0);
      assert.deepEqual(await store().sessions.findById(live.id), live);
    });
  });

  describe('one-time links', () => {
    it('keeps only the newest password link of a developer, and the newest invitation of an app for an email', async () => {
      const developer = await stored();
      const other = await stored();
      const app = await storedApp();
      const otherApp = await storedApp();
      const first = makePasswordLink(developer.id, { purpose: 'set_password' });
      const othersLink = makePasswordLink(other.id);
      const firstInvitation = makeInvitation(app.appId, 'ada@example.com');
      const otherEmail = makeInvitation(app.appId, 'bob@example.com');
      const otherAppInvitation = makeInvitation(otherApp.appId, 'ada@example.com');
      for (const link of [first, othersLink, firstInvitation, otherEmail, otherAppInvitation])
        assert.equal(await insertLink(current(), link, none), true);
      const second = makePasswordLink(developer.id);
      const secondInvitation = makeInvitation(app.appId, 'ada@example.com', { createdAt: T0 + 1 });
      await insertLink(current(), second, none);
      await insertLink(current(), secondInvitation, none);
      assert.equal(await store().links.findById(first.id), undefined);
      assert.equal(await store().links.findById(firstInvitation.id), undefined);
      for (const kept of [second, othersLink, secondInvitation, otherEmail, otherAppInvitation])
        assert.deepEqual(await store().links.findById(kept.id), kept);
      assert.deepEqual(
        (await store().links.invitationsOf(app.appId, T0)).map((link) => link.id),
        [secondInvitation.id, otherEmail.id],
      );
      assert.deepEqual(await store().links.invitationsOf(app.appId, T0 + 7 * 86_400_000), [], 'expired ones are not listed');
    });

    it('makes no link for an app or a developer that does not exist, and none whose events cannot be written', async () => {
      assert.equal(await insertLink(current(), makeInvitation('no-such-app', 'ada@example.com'), none), undefined);
      assert.equal(await insertLink(current(), makePasswordLink(randomBytes(8).toString('hex')), none), undefined);
      const app = await storedApp();
      const invitation = makeInvitation(app.appId, 'ada@example.com');
      await assert.rejects(insertLink(current(), invitation, () => ({ app: [makeEvent(app.appId, { type: null as never })] })));
      assert.equal(await store().links.findById(invitation.id), undefined);
    });

    it('removes a link (an invitation withdrawn), and expired links in batches', async () => {
      const app = await storedApp();
      const withdrawn = makeInvitation(app.appId, 'a@example.com');
      await insertLink(current(), withdrawn, none);
      assert.equal(await deleteLink(current(), withdrawn.id, none), true);
      assert.equal(await deleteLink(current(), withdrawn.id, none), false);
      const expired = ['b', 'c', 'd'].map((name, n) => makeInvitation(app.appId, `${name}@example.com`, { expiresAt: T0 - n }));
      const live = makeInvitation(app.appId, 'e@example.com', { expiresAt: T0 + 1 });
      for (const link of [...expired, live]) await insertLink(current(), link, none);
      assert.equal(await store().links.deleteExpired(T0, 2), 2);
      assert.equal(await store().links.deleteExpired(T0, 2), 1);
      assert.equal(await store().links.deleteExpired(T0, 2), 0);
      assert.deepEqual(await store().links.findById(live.id), live);
    });
  });

  describe('app members', () => {
    it('gives an app an owner; a new owner replaces the previous one, who is no member then; collaborators stay', async () => {
      const [ada, bob, cy] = [await stored(), await stored(), await stored()];
      const app = await storedApp();
      assert.deepEqual(await setOwner(current(), app.appId, ada.id, T0, none), { previousOwnerId: null });
      const invitation = makeInvitation(app.appId, cy.email);
      await insertLink(current(), invitation, none);
      assert.deepEqual(await acceptInvitation(current(), invitation.id, cy.id, T0 + 1, none), {
        appId: app.appId,
        role: 'collaborator',
        added: true,
      });
      assert.deepEqual(
        await setOwner(current(), app.appId, bob.id, T0 + 2, ({ previousOwnerId }) => ({
          app: [makeEvent(app.appId, { type: 'app.owner_changed', principal: 'operator', details: { ownerId: bob.id, previousOwnerId } })],
        })),
        { previousOwnerId: ada.id },
      );
      assert.deepEqual(
        (await store().members.ofApp(app.appId)).map(({ developerId, email, role, addedAt }) => ({ developerId, email, role, addedAt })),
        [
          { developerId: bob.id, email: bob.email, role: 'owner', addedAt: T0 + 2 },
          { developerId: cy.id, email: cy.email, role: 'collaborator', addedAt: T0 + 1 },
        ],
      );
      assert.equal(await store().members.roleOf(app.appId, ada.id), undefined);
      const [event] = await current().events.list({ appId: app.appId, limit: 10 });
      assert.deepEqual(event?.details, { ownerId: bob.id, previousOwnerId: ada.id });
    });

    it('makes a collaborator the owner in its own row, and changes nothing (no event) for the owner it has', async () => {
      const [ada, bob] = [await stored(), await stored()];
      const app = await storedApp();
      await setOwner(current(), app.appId, ada.id, T0, none);
      const invitation = makeInvitation(app.appId, bob.email);
      await insertLink(current(), invitation, none);
      await acceptInvitation(current(), invitation.id, bob.id, T0, none);
      assert.deepEqual(await setOwner(current(), app.appId, bob.id, T0, none), { previousOwnerId: ada.id });
      assert.deepEqual(
        (await store().members.ofApp(app.appId)).map((member) => [member.developerId, member.role]),
        [[bob.id, 'owner']],
      );
      assert.deepEqual(await setOwner(current(), app.appId, bob.id, T0, () => unwritable(bob.id)), { previousOwnerId: bob.id });
    });

    it('gives no app to a disabled or unknown developer, sets no owner of an unknown app, and none whose events fail', async () => {
      const disabled = await stored({ disabledAt: T0 });
      const ada = await stored();
      const app = await storedApp();
      assert.equal(await setOwner(current(), app.appId, disabled.id, T0, none), undefined);
      assert.equal(await setOwner(current(), app.appId, randomBytes(8).toString('hex'), T0, none), undefined);
      assert.equal(await setOwner(current(), 'no-such-app', ada.id, T0, none), undefined);
      await assert.rejects(setOwner(current(), app.appId, ada.id, T0, () => unwritable(ada.id)));
      assert.deepEqual(await store().members.ofApp(app.appId), []);
    });

    it('inserts an app with its owner and its events; at the owner\u2019s limit, or for no enabled developer, nothing', async () => {
      const [ada, disabled] = [await stored(), await stored({ disabledAt: T0 })];
      const first = makeApp({ createdAt: T0 + 1 });
      const ownerChanged = (app: { appId: string }) => () => [
        makeEvent(app.appId, { type: 'app.owner_changed', principal: 'developer', details: { ownerId: ada.id } }),
      ];
      assert.deepEqual(await insertOwned(current(), first, { developerId: ada.id, maxOwnedApps: 2 }, ownerChanged(first)), {
        inserted: true,
        ownedApps: 0,
      });
      assert.deepEqual(await current().apps.findById(first.appId), first);
      assert.deepEqual(
        (await store().members.ofApp(first.appId)).map(({ developerId, role, addedAt }) => ({ developerId, role, addedAt })),
        [{ developerId: ada.id, role: 'owner', addedAt: T0 + 1 }],
      );
      assert.deepEqual(
        (await current().events.list({ appId: first.appId, limit: 10 })).map((event) => event.type),
        ['app.owner_changed'],
      );
      // A collaboration is no app owned.
      const joined = await storedApp();
      const invitation = makeInvitation(joined.appId, ada.email);
      await insertLink(current(), invitation, none);
      await acceptInvitation(current(), invitation.id, ada.id, T0, none);
      assert.deepEqual(await insertOwned(current(), makeApp(), { developerId: ada.id, maxOwnedApps: 2 }, () => []), {
        inserted: true,
        ownedApps: 1,
      });

      const refused = makeApp();
      assert.deepEqual(await insertOwned(current(), refused, { developerId: ada.id, maxOwnedApps: 2 }, ownerChanged(refused)), {
        inserted: false,
        ownedApps: 2,
      });
      assert.equal(await insertOwned(current(), makeApp(), { developerId: disabled.id, maxOwnedApps: null }, () => []), undefined);
      assert.equal(
        await insertOwned(current(), makeApp(), { developerId: randomBytes(8).toString('hex'), maxOwnedApps: null }, () => []),
        undefined,
      );
      assert.equal(await current().apps.findById(refused.appId), undefined);
      assert.deepEqual(await current().events.list({ appId: refused.appId, limit: 10 }), []);
      assert.equal(await current().apps.count(), 3);
      // No limit: the operator's.
      assert.deepEqual(await insertOwned(current(), makeApp(), { developerId: ada.id, maxOwnedApps: null }, () => []), {
        inserted: true,
        ownedApps: 2,
      });
    });

    it('writes neither app nor owner whose events cannot be written, and refuses a taken AppID', async () => {
      const ada = await stored();
      const app = makeApp();
      const unwritableEvent = () => [makeEvent(app.appId, { type: null as unknown as 'app.owner_changed' })];
      await assert.rejects(insertOwned(current(), app, { developerId: ada.id, maxOwnedApps: null }, unwritableEvent));
      assert.equal(await current().apps.findById(app.appId), undefined);
      assert.deepEqual(await store().members.ofDeveloper(ada.id), []);
      await insertOwned(current(), app, { developerId: ada.id, maxOwnedApps: null }, () => []);
      await assert.rejects(
        insertOwned(current(), makeApp({ appId: app.appId }), { developerId: ada.id, maxOwnedApps: null }, () => []),
        StoreConflictError,
      );
      assert.equal((await store().members.ofDeveloper(ada.id)).length, 1);
    });

    it('lets simultaneous insertions for one developer pass its limit never', async () => {
      const ada = await stored();
      const results = await Promise.all(
        Array.from({ length: 20 }, () => insertOwned(current(), makeApp(), { developerId: ada.id, maxOwnedApps: 5 }, () => [])),
      );
      assert.equal(results.filter((result) => result?.inserted === true).length, 5);
      assert.equal((await store().members.ofDeveloper(ada.id)).length, 5);
      assert.equal(await current().apps.count(), 5);
    });

    it('inserts one app of insertions sent together with one once value; one refused by the limit claims nothing', async () => {
      const ada = await stored();
      const once = { value: randomBytes(16).toString('base64url'), keepUntil: T0 + 3600_000 };
      const outcomes = await Promise.allSettled(
        Array.from({ length: 4 }, () => insertOwned(current(), makeApp(), { developerId: ada.id, maxOwnedApps: 5, once }, () => [])),
      );
      assert.equal(outcomes.filter((outcome) => outcome.status === 'fulfilled').length, 1);
      for (const outcome of outcomes)
        if (outcome.status === 'rejected') assert.equal((outcome.reason as { code?: string }).code, 'CONFLICT', String(outcome.reason));
      assert.equal((await store().members.ofDeveloper(ada.id)).length, 1);

      const full = await stored();
      const other = { value: randomBytes(16).toString('base64url'), keepUntil: T0 + 3600_000 };
      assert.deepEqual(await insertOwned(current(), makeApp(), { developerId: full.id, maxOwnedApps: 0, once: other }, () => []), {
        inserted: false,
        ownedApps: 0,
      });
      assert.deepEqual(await insertOwned(current(), makeApp(), { developerId: full.id, maxOwnedApps: 1, once: other }, () => []), {
        inserted: true,
        ownedApps: 0,
      });
    });

    it('keeps one owner when two are set at the same moment', async () => {
      const developers = [await stored(), await stored(), await stored(), await stored()];
      const app = await storedApp();
      const results = await Promise.allSettled(developers.map((developer) => setOwner(current(), app.appId, developer.id, T0, none)));
      assert.ok(results.some((result) => result.status === 'fulfilled'));
      const members = await store().members.ofApp(app.appId);
      assert.equal(members.length, 1);
      assert.equal(members[0]?.role, 'owner');
    });

    it('uses an invitation once; a member keeps its role; an expired one or a disabled developer adds no one', async () => {
      const [owner, ada, bob] = [await stored(), await stored(), await stored()];
      const disabled = await stored({ disabledAt: T0 });
      const app = await storedApp();
      await setOwner(current(), app.appId, owner.id, T0, none);
      const forAda = makeInvitation(app.appId, ada.email);
      const forOwner = makeInvitation(app.appId, owner.email);
      const expired = makeInvitation(app.appId, bob.email, { expiresAt: T0 + 10 });
      const forDisabled = makeInvitation(app.appId, disabled.email);
      for (const link of [forAda, forOwner, expired, forDisabled]) await insertLink(current(), link, none);

      const twice = await Promise.all([
        acceptInvitation(current(), forAda.id, ada.id, T0, none),
        acceptInvitation(current(), forAda.id, ada.id, T0, none),
      ]);
      assert.deepEqual(
        twice.filter((result) => result !== undefined),
        [{ appId: app.appId, role: 'collaborator', added: true }],
      );
      assert.deepEqual(await acceptInvitation(current(), forOwner.id, owner.id, T0, none), {
        appId: app.appId,
        role: 'owner',
        added: false,
      });
      assert.equal(await store().links.findById(forOwner.id), undefined, 'used up all the same');
      assert.equal(await acceptInvitation(current(), expired.id, bob.id, T0 + 10, none), undefined);
      assert.equal(await acceptInvitation(current(), forDisabled.id, disabled.id, T0, none), undefined);
      assert.deepEqual(await store().links.findById(forDisabled.id), forDisabled, 'kept for when the developer is enabled');
      assert.deepEqual(
        (await store().members.ofApp(app.appId)).map((member) => member.role),
        ['owner', 'collaborator'],
      );
      assert.deepEqual(
        (await store().members.ofDeveloper(ada.id)).map((member) => [member.appId, member.role, member.email]),
        [[app.appId, 'collaborator', ada.email]],
      );
    });

    it('removes a member, telling its role, with its events; nothing for a non-member', async () => {
      const [ada, bob] = [await stored(), await stored()];
      const app = await storedApp();
      await setOwner(current(), app.appId, ada.id, T0, none);
      const invitation = makeInvitation(app.appId, bob.email);
      await insertLink(current(), invitation, none);
      await acceptInvitation(current(), invitation.id, bob.id, T0, none);
      await assert.rejects(removeMember(current(), app.appId, bob.id, () => ({ app: [makeEvent(app.appId, { type: null as never })] })));
      assert.equal(await store().members.roleOf(app.appId, bob.id), 'collaborator');
      assert.deepEqual(await removeMember(current(), app.appId, bob.id, none), { role: 'collaborator', credentialsRevoked: [] });
      assert.equal(await removeMember(current(), app.appId, bob.id, none), undefined);
      assert.deepEqual(await removeMember(current(), app.appId, ada.id, none), { role: 'owner', credentialsRevoked: [] });
      assert.deepEqual(await store().members.ofApp(app.appId), []);
    });

    it('forgets an app\u2019s memberships and invitations when the app is deleted; its developers stay', async () => {
      const [ada, bob] = [await stored(), await stored()];
      const app = await storedApp();
      const kept = await storedApp();
      await setOwner(current(), app.appId, ada.id, T0, none);
      await setOwner(current(), kept.appId, ada.id, T0, none);
      const invitation = makeInvitation(app.appId, bob.email);
      await insertLink(current(), invitation, none);
      assert.equal(await deleteApp(current(), app.appId, () => []), true);
      assert.deepEqual(await store().members.ofApp(app.appId), []);
      assert.equal(await store().links.findById(invitation.id), undefined);
      assert.deepEqual(
        (await store().members.ofDeveloper(ada.id)).map((member) => member.appId),
        [kept.appId],
      );
      assert.ok(await store().accounts.findById(bob.id));
    });

    it('deletes an app and writes its members\u2019 account events of it, built from the app and its members as they were', async () => {
      const [ada, bob, carol] = [await stored(), await stored(), await stored()];
      const app = await storedApp();
      await setOwner(current(), app.appId, ada.id, T0, none);
      const invitation = makeInvitation(app.appId, bob.email);
      await insertLink(current(), invitation, none);
      await acceptInvitation(current(), invitation.id, bob.id, T0, none);
      const seen: DeletedApp[] = [];
      const deleted = await deleteApp(current(), app.appId, (what) => {
        seen.push(what);
        return what.members.map(({ developerId, role }) =>
          developerEvent(developerId, { type: 'developer.app_deleted', details: { appId: what.app.appId, name: what.app.name, role } }),
        );
      });
      assert.equal(deleted, true);
      assert.deepEqual(seen, [
        {
          app,
          members: [
            { developerId: ada.id, role: 'owner' },
            { developerId: bob.id, role: 'collaborator' },
          ],
        },
      ]);
      assert.equal(await current().apps.findById(app.appId), undefined);
      for (const [developer, role] of [
        [ada, 'owner'],
        [bob, 'collaborator'],
      ] as const) {
        assert.deepEqual(
          (await store().accounts.listEvents(developer.id, 10)).map((event) => [event.type, event.details]),
          [['developer.app_deleted', { appId: app.appId, name: app.name, role }]],
        );
      }
      assert.deepEqual(await store().accounts.listEvents(carol.id, 10), []);
      assert.equal(await deleteApp(current(), app.appId, () => unwritable(ada.id).developer!), false, 'nothing to delete, nothing written');
    });

    it('deletes nothing of an app whose members\u2019 events cannot be written, or cannot be built: both, or neither', async () => {
      const ada = await stored();
      const app = await storedApp();
      await setOwner(current(), app.appId, ada.id, T0, none);
      const token = makeToken(app.appId, { kind: 'admin' });
      await current().tokens.insert(token, 0);
      await current().events.append([makeEvent(app.appId)]);
      const failures = [
        () => [developerEvent(ada.id, { type: 'developer.app_deleted' }), ...unwritable(ada.id).developer!],
        () => {
          throw new Error('no events');
        },
      ];
      for (const audit of failures) {
        await assert.rejects(deleteApp(current(), app.appId, audit));
        assert.deepEqual(await current().apps.findById(app.appId), app);
        assert.equal(await store().members.roleOf(app.appId, ada.id), 'owner');
        assert.deepEqual(await current().tokens.findBySelector(token.selector), token);
        assert.equal((await current().events.list({ appId: app.appId, limit: 10 })).length, 1);
        assert.deepEqual(await store().accounts.listEvents(ada.id, 10), []);
      }
    });
  });
}
