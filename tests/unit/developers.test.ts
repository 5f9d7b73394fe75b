import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { parseOptions } from '@node-rs/argon2';
import { checkedEmail, MAX_EMAIL_LENGTH, normaliseEmail } from '../../src/developers/email.js';
import { issuedLink, LINK_LIFETIME_MS } from '../../src/developers/one-time-link.js';
import { dummyPasswordHash, hashPassword, needsRehash, verifyPassword } from '../../src/developers/password-hash.js';
import { checkedNewPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../src/developers/password-rules.js';
import { APP_ACTIONS, mayAct, type AppAction } from '../../src/developers/roles.js';
import { generateSecretToken, parseSecretToken, secretMatches, SECRET_TOKEN_LENGTH } from '../../src/developers/secret-token.js';
import {
  needsTouch,
  SESSION_IDLE_MS,
  SESSION_MAX_MS,
  SESSION_TOUCH_INTERVAL_MS,
  sessionExpiry,
  type SessionRecord,
} from '../../src/developers/session.js';
import { FakeClock } from '../helpers/clock.js';

// The pure parts of developer accounts: email and password rules, the hash's parameters, secret
// tokens, link and session lifetimes, and who may do what on an app.

describe('normaliseEmail', () => {
  it('trims and lower-cases an address, the local part too', () => {
    assert.equal(normaliseEmail('  Ada.Lovelace+Portal@Example.COM \n'), 'ada.lovelace+portal@example.com');
    assert.equal(normaliseEmail("o'brien@xn--bcher-kva.example"), "o'brien@xn--bcher-kva.example");
    assert.equal(normaliseEmail('dev@localhost'), 'dev@localhost');
  });

  it('refuses what a browser\u2019s email field refuses, and what is too long', () => {
    for (const raw of [
      '',
      'no-at-sign',
      '@example.com',
      'ada@',
      'ada@@example.com',
      'ada lovelace@example.com',
      'ada@exa mple.com',
      'ada@-example.com',
      'ada@example-.com',
      'ada@example..com',
      'ada@b\u00fccher.example',
      'ad\u00e4@example.com',
      'ada@\u212Aii.example', // the Kelvin sign, which lower-cases to an ASCII "k"
      'ada\n@example.com',
      `${'a'.repeat(65)}@example.com`,
      `ada@${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(60)}`,
      'x'.repeat(100_000),
    ]) {
      assert.equal(normaliseEmail(raw), undefined, JSON.stringify(raw.slice(0, 80)));
    }
    assert.equal(normaliseEmail(`${'a'.repeat(64)}@example.com`), `${'a'.repeat(64)}@example.com`);
    const longest = `ada@${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(58)}`;
    assert.equal(longest.length, MAX_EMAIL_LENGTH);
    assert.equal(normaliseEmail(longest), longest);
  });

  it('checkedEmail says what is wrong, as invalid_request', () => {
    assert.throws(() => checkedEmail('nope'), { code: 'invalid_request', message: /name@domain, at most 254 characters/ });
  });
});

describe('password rules', () => {
  it(`accepts ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters of anything, spaces and any script included, with no composition rules`, () => {
    for (const password of [
      'a'.repeat(MIN_PASSWORD_LENGTH),
      'correct horse battery staple',
      '密码密码密码密码密码密码',
      '😀'.repeat(MAX_PASSWORD_LENGTH),
      ' leading and trailing ',
    ]) {
      assert.equal(checkedNewPassword(password), password.normalize('NFKC'));
    }
  });

  it('refuses shorter, longer, and only spaces', () => {
    for (const password of [
      '',
      'a'.repeat(MIN_PASSWORD_LENGTH - 1),
      'a'.repeat(MAX_PASSWORD_LENGTH + 1),
      '😀'.repeat(MAX_PASSWORD_LENGTH + 1),
      ' '.repeat(20),
      'x'.repeat(1_000_000),
    ]) {
      assert.throws(() => checkedNewPassword(password), { code: 'invalid_request' }, `${password.length} characters`);
    }
  });

  it('counts characters, not UTF-16 units or bytes: 12 emoji are a password', () => {
    assert.equal(checkedNewPassword('😀'.repeat(12)), '😀'.repeat(12));
    assert.throws(() => checkedNewPassword('😀'.repeat(11)), { code: 'invalid_request' });
  });
});

describe('password hashing (Argon2id)', () => {
  it("hashes with Argon2id at OWASP's parameters: 19 MiB, 2 passes, 1 lane, a 16-byte salt", async () => {
    const hash = await hashPassword('correct horse battery staple');
    assert.match(hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    assert.deepEqual(
      { ...parseOptions(hash) },
      { algorithm: 2, version: 1, memoryCost: 19_456, timeCost: 2, parallelism: 1, outputLen: 32, saltLen: 16 },
    );
    assert.notEqual(await hashPassword('correct horse battery staple'), hash, 'a new salt every time');
    assert.equal(needsRehash(hash), false);
  });

  it('verifies the password and nothing else, and a password typed in another Unicode form as the same', async () => {
    const hash = await hashPassword(checkedNewPassword('caf\u00e9 au lait, no sugar'));
    assert.equal(await verifyPassword(hash, 'caf\u00e9 au lait, no sugar'), true);
    assert.equal(await verifyPassword(hash, 'cafe\u0301 au lait, no sugar'), true, 'a combining accent is the same password');
    assert.equal(await verifyPassword(hash, 'caf\u00e9 au lait, no sugar '), false);
    assert.equal(await verifyPassword(hash, 'CAF\u00c9 AU LAIT, NO SUGAR'), false);
    assert.equal(await verifyPassword(hash, 'x'.repeat(100_000)), false);
    assert.equal(await verifyPassword('not a hash', 'caf\u00e9 au lait, no sugar'), false);
  });

  it('asks for a new hash of one made with other parameters', async () => {
    assert.equal(needsRehash('$argon2id$v=19$m=4096,t=3,p=1$c29tZXNhbHRzb21lc2FsdA$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc'), true);
    assert.equal(needsRehash('garbage'), true);
  });

  it('has one dummy hash, made with the same parameters, that no password matches', async () => {
    const dummy = await dummyPasswordHash();
    assert.equal(await dummyPasswordHash(), dummy);
    assert.equal(needsRehash(dummy), false);
    assert.equal(await verifyPassword(dummy, ''), false);
  });
});

describe('secret tokens (sessions, one-time links)', () => {
  it('are ID.SECRET: 128 random bits of id, 256 of secret, base64url; only the SHA-256 of the secret is kept', () => {
    const issued = generateSecretToken();
    assert.equal(issued.token.length, SECRET_TOKEN_LENGTH);
    assert.match(issued.token, /^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);
    const [id, secret] = issued.token.split('.') as [string, string];
    assert.equal(issued.id, id);
    assert.equal(Buffer.from(id, 'base64url').length, 16);
    assert.deepEqual(issued.secretHash, createHash('sha256').update(Buffer.from(secret, 'base64url')).digest());
    assert.ok(!issued.secretHash.toString('hex').includes(Buffer.from(secret, 'base64url').toString('hex')));
  });

  it('parses back into a secret that matches its hash, and nothing else matches', () => {
    const issued = generateSecretToken();
    const presented = parseSecretToken(issued.token)!;
    assert.equal(presented.id, issued.id);
    assert.equal(secretMatches(presented, issued.secretHash), true);
    assert.equal(secretMatches(presented, generateSecretToken().secretHash), false);
    assert.equal(secretMatches(presented, Buffer.alloc(0)), false);
    const other = parseSecretToken(`${issued.id}.${generateSecretToken().token.split('.')[1]}`)!;
    assert.equal(secretMatches(other, issued.secretHash), false);
  });

  it('refuses anything that is not exactly one spelling of a token, before any lookup', () => {
    const { token } = generateSecretToken();
    const [id, secret] = token.split('.') as [string, string];
    for (const bad of [
      '',
      token.slice(1),
      `${token}A`,
      token.replace('.', '-'),
      `${id}.${secret.slice(0, -1)}B`, // padding bits set: another spelling of the same bytes
      `${id.slice(0, -1)}B.${secret}`,
      `${id}.${secret.slice(0, -1)}=`,
      token.replace(/[A-Za-z]/, '+'),
      ` ${token.slice(1)}`,
    ]) {
      assert.equal(parseSecretToken(bad), undefined, bad);
    }
    const distinct = new Set(Array.from({ length: 1000 }, () => generateSecretToken().token));
    assert.equal(distinct.size, 1000);
    for (const one of [...distinct].slice(0, 100)) assert.ok(parseSecretToken(one), one);
  });
});

describe('one-time links', () => {
  it('last a week for a new account and an invitation, a day for a reset', () => {
    assert.deepEqual(LINK_LIFETIME_MS, { set_password: 7 * 86_400_000, reset_password: 86_400_000, invitation: 7 * 86_400_000 });
  });

  it('are a path on the portal, and a whole URL when the public URL is known', () => {
    const { id, token } = generateSecretToken();
    const at = Date.parse('2026-06-01T00:00:00Z');
    assert.deepEqual(issuedLink('set_password', id, token, at, undefined), {
      purpose: 'set_password',
      linkId: id,
      path: `/portal/set-password?token=${token}`,
      url: null,
      expiresAt: '2026-06-01T00:00:00.000Z',
    });
    assert.equal(
      issuedLink('reset_password', id, token, at, 'https://tessera.example.com/').url,
      `https://tessera.example.com/portal/set-password?token=${token}`,
    );
    assert.equal(
      issuedLink('invitation', id, token, at, 'https://example.com/auth').url,
      `https://example.com/auth/portal/accept-invitation?token=${token}`,
    );
  });
});

describe('session lifetimes', () => {
  const clock = new FakeClock();
  const start = clock.now();
  const session = (lastSeenAt: number): SessionRecord => ({
    id: 'id',
    secretHash: Buffer.alloc(32),
    developerId: 'd',
    createdAt: start,
    lastSeenAt,
    expiresAt: sessionExpiry(start, lastSeenAt),
  });

  it('end 30 minutes after the last request, and 12 hours after sign-in at the latest', () => {
    assert.equal(SESSION_IDLE_MS, 30 * 60_000);
    assert.equal(SESSION_MAX_MS, 12 * 3_600_000);
    assert.equal(sessionExpiry(start, start), start + SESSION_IDLE_MS);
    assert.equal(sessionExpiry(start, start + 3_600_000), start + 3_600_000 + SESSION_IDLE_MS);
    assert.equal(sessionExpiry(start, start + SESSION_MAX_MS - 60_000), start + SESSION_MAX_MS);
  });

  it('write their last-seen time at most once a minute, and not once the absolute end is reached', () => {
    assert.equal(needsTouch(session(start), start + SESSION_TOUCH_INTERVAL_MS - 1), false);
    assert.equal(needsTouch(session(start), start + SESSION_TOUCH_INTERVAL_MS), true);
    assert.equal(needsTouch(session(start + SESSION_MAX_MS - SESSION_IDLE_MS), start + SESSION_MAX_MS - SESSION_IDLE_MS + 120_000), false);
  });
});

describe('mayAct: who may do what on an app', () => {
  const ownerOnly: AppAction[] = ['rotate_secret', 'delete_app', 'manage_collaborators', 'manage_webhooks'];

  it('lets the owner do everything', () => {
    for (const action of APP_ACTIONS) assert.equal(mayAct('owner', action), true, action);
  });

  it('lets a collaborator do everything but rotate the secret, delete the app, manage collaborators or manage webhooks', () => {
    for (const action of APP_ACTIONS) assert.equal(mayAct('collaborator', action), !ownerOnly.includes(action), action);
    assert.deepEqual(
      APP_ACTIONS.filter((action) => mayAct('collaborator', action)),
      ['view_app', 'view_configuration', 'view_events', 'change_configuration', 'introspect_tokens', 'revoke_tokens', 'manage_credentials'],
    );
  });

  it('lets someone who is no member do nothing', () => {
    for (const action of APP_ACTIONS) assert.equal(mayAct(undefined, action), false, action);
  });
});
