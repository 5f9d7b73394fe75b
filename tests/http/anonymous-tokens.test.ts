import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { OPERATOR } from '../../src/request-context.js';
import { ANONYMOUS_TOKEN_LENGTH, signAnonymousToken } from 'tessera-tokens/internal/tokens/anonymous-token.js';
import { assertError, assertInvalidToken } from '../helpers/assert.js';
import { createConfiguredApp } from '../helpers/configured-app.js';
import {
  adminTokenOf,
  anonymousTokenOf,
  bearer,
  introspectToken,
  requestAs,
  revokeToken,
  signingKeyIdOf,
  tokenWorks,
  whoami,
} from '../helpers/http.js';
import { serverForSuite } from '../helpers/server.js';
import { createSecretKey } from 'node:crypto';

/** Self-verifying anonymous tokens through the real server: issue #13. */

const MAX_REVOKED = 5;

const server = serverForSuite({ revokedTokensMaxPerApp: MAX_REVOKED });

/** The key the store signs with, as an attacker who read the database would have it. */
async function leakedSigningKey() {
  const keys = await server.tessera.store.signingKeys.list();
  const signing = keys.filter((key) => key.retiredAt === null).at(-1)!;
  return { id: signing.id, key: createSecretKey(signing.secret!) };
}

describe('anonymous tokens', () => {
  it('are 68 URL-safe characters, new on every request, and say who they are and until when', async () => {
    const fresh = await createConfiguredApp(server, {});
    const tokens = new Set<string>();
    for (let i = 0; i < 20; i++) tokens.add(await anonymousTokenOf(fresh));
    assert.equal(tokens.size, 20);
    for (const token of tokens) {
      assert.match(token, /^[A-Za-z0-9_-]{68}$/);
      assert.equal(token.length, ANONYMOUS_TOKEN_LENGTH);
    }
    const never = await whoami(fresh.appUrl, bearer([...tokens][0]!));
    assert.deepEqual(never.body, { appId: fresh.appId, principal: 'anonymous', id: 'ANONYMOUS', auth: 'bearer', expiresAt: null });
    const expiresAt = Date.now() + 3_600_000;
    const expiring = await whoami(fresh.appUrl, bearer(await anonymousTokenOf(fresh, { expiresAt })));
    assert.equal(expiring.body.expiresAt, expiresAt);
  });

  it('work until their expiry and not one millisecond after', async () => {
    const expiresAt = Date.now() + 700;
    const token = await anonymousTokenOf(server, { expiresAt });
    assert.ok(await tokenWorks(server.appUrl, token));
    await sleep(Math.max(0, expiresAt - Date.now()) + 5);
    assertInvalidToken(await whoami(server.appUrl, bearer(token)));
  });

  it('work in their own app only, and refuse any change to a single character', async () => {
    const other = await createConfiguredApp(server, {}, 'Other');
    const token = await anonymousTokenOf(server);
    assertInvalidToken(await whoami(other.appUrl, bearer(token)));
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    for (let i = 0; i < token.length; i++) {
      const replacement = alphabet[(alphabet.indexOf(token[i]!) + 1 + (i % 7)) % alphabet.length]!;
      const tampered = token.slice(0, i) + replacement + token.slice(i + 1);
      assertInvalidToken(await whoami(server.appUrl, bearer(tampered)), tampered);
    }
    assert.ok(await tokenWorks(server.appUrl, token));
  });

  it('are answered by introspection from the token itself', async () => {
    const admin = await adminTokenOf(server);
    const expiresAt = Date.now() + 3_600_000;
    const before = Date.now();
    const token = await anonymousTokenOf(server, { expiresAt });
    const answer = await introspectToken(server.appUrl, token, bearer(admin));
    assert.equal(answer.status, 200, answer.text);
    const { iat, ...rest } = answer.body as { iat: number };
    assert.deepEqual(rest, {
      active: true,
      token_type: 'bearer',
      principal: 'anonymous',
      id: 'ANONYMOUS',
      sub: 'ANONYMOUS',
      client_id: server.app.appId,
      app_id: server.app.appId,
      exp: Math.floor(expiresAt / 1000),
    });
    assert.ok(iat >= Math.floor(before / 1000) && iat <= Math.ceil(Date.now() / 1000));
    assert.deepEqual((await introspectToken(server.appUrl, token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A'), bearer(admin))).body, {
      active: false,
    });
  });

  it('can never be an admin token, even when made with a leaked key', async () => {
    const key = await leakedSigningKey();
    const now = Date.now();
    for (const expiresAt of [null, now + 60_000]) {
      const forged = signAnonymousToken(key, server.app.appId, now, expiresAt).token;
      const answer = await whoami(server.appUrl, bearer(forged));
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.principal, 'anonymous', 'a forged token is at most what anyone gets with the AppID');
      assertError(await requestAs(server.appUrl, bearer(forged)), 403, 'ADMIN_REQUIRED');
    }
    // Other format versions and bytes a key could sign are not tokens at all.
    const forged = Buffer.from(signAnonymousToken(key, server.app.appId, now, null).token, 'base64url');
    for (const version of [0, 2, 0x41, 0xff]) {
      forged[0] = version;
      assertInvalidToken(await whoami(server.appUrl, bearer(forged.toString('base64url'))));
    }
  });
});

describe('keys', () => {
  it('rotate: older tokens keep working, new ones carry the new key; retire: every token of the old key is refused', async () => {
    const fresh = await createConfiguredApp(server, {}, 'Keys');
    const before = await anonymousTokenOf(fresh);
    const oldKey = signingKeyIdOf(before);
    const rotated = await server.tessera.signingKeys.rotate();
    const signing = rotated.find((key) => key.state === 'signing')!;
    assert.ok(signing.id > oldKey);
    assert.equal(rotated.find((key) => key.id === oldKey)?.state, 'verifying');
    const after = await anonymousTokenOf(fresh);
    assert.equal(signingKeyIdOf(after), signing.id);
    assert.ok(await tokenWorks(fresh.appUrl, before), 'a token of the older key works after a rotation');
    assert.ok(await tokenWorks(fresh.appUrl, after));

    await assert.rejects(server.tessera.signingKeys.retire(signing.id), /rotate first/);
    const retired = await server.tessera.signingKeys.retire(oldKey);
    assert.equal(retired.find((key) => key.id === oldKey)?.state, 'retired');
    assertInvalidToken(await whoami(fresh.appUrl, bearer(before)));
    assert.ok(await tokenWorks(fresh.appUrl, after));
    const stored = (await server.tessera.store.signingKeys.list()).find((key) => key.id === oldKey);
    assert.equal(stored?.secret, null, 'a retired key is erased');
    await assert.rejects(server.tessera.signingKeys.retire(oldKey), /no active key/);
  });
});

describe('revocation of anonymous tokens', () => {
  it('RFC 7009: a token revoked by itself, by an admin or by another caller of the app that holds it is refused at once; others are not', async () => {
    const fresh = await createConfiguredApp(server, {}, 'Revocation');
    const admin = await adminTokenOf(fresh);
    const own = await anonymousTokenOf(fresh);
    const byAdmin = await anonymousTokenOf(fresh, { expiresAt: Date.now() + 3_600_000 });
    const bystander = await anonymousTokenOf(fresh);
    assert.equal((await revokeToken(fresh.appUrl, own)).status, 200);
    assertInvalidToken(await whoami(fresh.appUrl, bearer(own)));
    assert.equal((await revokeToken(fresh.appUrl, byAdmin, bearer(admin))).status, 200);
    assertInvalidToken(await whoami(fresh.appUrl, bearer(byAdmin)));
    assert.ok(await tokenWorks(fresh.appUrl, bystander));
    const held = await anonymousTokenOf(fresh);
    assert.equal((await revokeToken(fresh.appUrl, held, bearer(await anonymousTokenOf(fresh)))).status, 200);
    assertInvalidToken(await whoami(fresh.appUrl, bearer(held)));
    assert.ok(await tokenWorks(fresh.appUrl, bystander));
    assertError(await revokeToken(fresh.appUrl, admin, bearer(bystander)), 403, 'ADMIN_REQUIRED');
    assert.ok(await tokenWorks(fresh.appUrl, admin));
    assert.equal((await revokeToken(fresh.appUrl, own, bearer(admin))).status, 200, 'revoking again is not an error');
    assert.deepEqual((await introspectToken(fresh.appUrl, own, bearer(admin))).body, { active: false });
  });

  it('keeps at most the configured number of revocations per app for callers without a secret; an admin can always revoke', async () => {
    const fresh = await createConfiguredApp(server, {}, 'Capped');
    for (let i = 0; i < MAX_REVOKED; i++) {
      const token = await anonymousTokenOf(fresh);
      assert.equal((await revokeToken(fresh.appUrl, token)).status, 200);
    }
    const one = await anonymousTokenOf(fresh);
    const refused = await revokeToken(fresh.appUrl, one);
    assertError(refused, 429, 'TOO_MANY_REQUESTS');
    assert.ok(refused.headers.get('retry-after'));
    assert.ok(await tokenWorks(fresh.appUrl, one));
    assert.equal((await revokeToken(fresh.appUrl, one, bearer(await adminTokenOf(fresh)))).status, 200);
    assertInvalidToken(await whoami(fresh.appUrl, bearer(one)));
    // An expired token needs nothing kept.
    const expiring = await anonymousTokenOf(fresh, { expiresAt: Date.now() + 300 });
    await sleep(350);
    assertInvalidToken(await whoami(fresh.appUrl, bearer(expiring)));
  });

  it('revoke-all: every anonymous token issued before is refused, every one issued after works', async () => {
    const fresh = await createConfiguredApp(server, {}, 'Cut-off');
    const admin = await adminTokenOf(fresh);
    const before = [await anonymousTokenOf(fresh), await anonymousTokenOf(fresh, { expiresAt: Date.now() + 3_600_000 })];
    const revoked = await requestAs(`${fresh.appUrl}/tokens?kind=anonymous`, bearer(admin), 'DELETE');
    assert.equal(revoked.status, 200, revoked.text);
    // Issued in the same millisecond as the revocation, or right after: it works.
    const after = await anonymousTokenOf(fresh);
    for (const token of before) assertInvalidToken(await whoami(fresh.appUrl, bearer(token)));
    assert.ok(await tokenWorks(fresh.appUrl, after));
    assert.ok(await tokenWorks(fresh.appUrl, admin), 'admin tokens are not touched by kind=anonymous');
    // Through the operator's path too.
    await server.tessera.revoker.revokeAll(fresh.appId, 'all', OPERATOR);
    assertInvalidToken(await whoami(fresh.appUrl, bearer(after)));
    assertInvalidToken(await whoami(fresh.appUrl, bearer(admin)));
  });

  it('deleting the app ends its anonymous tokens', async () => {
    const fresh = await createConfiguredApp(server, {}, 'Deleted');
    const token = await anonymousTokenOf(fresh);
    await server.tessera.apps.delete(fresh.appId, OPERATOR);
    assertError(await whoami(fresh.appUrl, bearer(token)), 404, 'APP_NOT_FOUND');
  });
});
