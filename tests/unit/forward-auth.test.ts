import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isAdminPath, parseAdminPathRules, resolveForwardedTarget } from '../../src/auth/forward.js';
import { TesseraError } from '../../src/errors.js';

const APP = '/api/apps/app1';

function segmentsOf(uri: string): string[] {
  return resolveForwardedTarget(uri).segments;
}

function assertRefused(uri: string): void {
  assert.throws(
    () => resolveForwardedTarget(uri),
    (error: unknown) => error instanceof TesseraError && error.code === 'invalid_request',
    `${JSON.stringify(uri)} was accepted`,
  );
}

describe('parseAdminPathRules', () => {
  it('reads a prefix for every method and a prefix for one method', () => {
    assert.deepEqual(parseAdminPathRules(['/configuration', 'DELETE /objects']), [
      { method: undefined, segments: ['configuration'] },
      { method: 'DELETE', segments: ['objects'] },
    ]);
  });

  it('upper-cases the method and trims spaces', () => {
    assert.deepEqual(parseAdminPathRules(['  delete   /objects/bucket  ']), [{ method: 'DELETE', segments: ['objects', 'bucket'] }]);
  });

  it('normalizes the prefix as it normalizes request paths', () => {
    assert.deepEqual(parseAdminPathRules(['/%61dmin/', '/a/./b/../c', '//x']), [
      { method: undefined, segments: ['admin'] },
      { method: undefined, segments: ['a', 'c'] },
      { method: undefined, segments: ['x'] },
    ]);
  });

  it('reads "/" as the whole app', () => {
    assert.deepEqual(parseAdminPathRules(['/']), [{ method: undefined, segments: [] }]);
  });

  it('reads no entries as no rules', () => {
    assert.deepEqual(parseAdminPathRules([]), []);
  });

  it('refuses an entry that is not a path prefix, naming it', () => {
    for (const entry of ['admin', 'GET admin', 'GET', '', '/a b', 'GET  /a /b', 'GE7 /a', '/a%2Fb', '/%zz']) {
      assert.throws(() => parseAdminPathRules(['/fine', entry]), (error: unknown) => {
        return error instanceof Error && error.message.includes(`"${entry}"`);
      }, JSON.stringify(entry));
    }
  });
});

describe('isAdminPath', () => {
  const rules = parseAdminPathRules(['/configuration', 'DELETE /objects', '/events/private']);

  it('covers the prefix and everything under it, on whole segments', () => {
    assert.equal(isAdminPath(rules, 'GET', ['configuration']), true);
    assert.equal(isAdminPath(rules, 'GET', ['configuration', 'x', 'y']), true);
    assert.equal(isAdminPath(rules, 'GET', ['configurationx']), false);
    assert.equal(isAdminPath(rules, 'GET', ['configuratio']), false);
    assert.equal(isAdminPath(rules, 'GET', ['x', 'configuration']), false);
    assert.equal(isAdminPath(rules, 'GET', []), false);
  });

  it('matches a multi-segment prefix only in full', () => {
    assert.equal(isAdminPath(rules, 'GET', ['events', 'private']), true);
    assert.equal(isAdminPath(rules, 'GET', ['events', 'private', '1']), true);
    assert.equal(isAdminPath(rules, 'GET', ['events']), false);
    assert.equal(isAdminPath(rules, 'GET', ['events', 'public']), false);
  });

  it('applies a method rule to that method only, whatever its case', () => {
    assert.equal(isAdminPath(rules, 'DELETE', ['objects', '1']), true);
    assert.equal(isAdminPath(rules, 'delete', ['objects']), true);
    assert.equal(isAdminPath(rules, 'GET', ['objects', '1']), false);
    assert.equal(isAdminPath(rules, 'POST', ['objects']), false);
  });

  it('applies a rule without a method to every method', () => {
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      assert.equal(isAdminPath(rules, method, ['configuration']), true, method);
    }
  });

  it('compares segments case-sensitively, as paths are', () => {
    assert.equal(isAdminPath(rules, 'GET', ['Configuration']), false);
  });

  it('covers the whole app with "/"', () => {
    const whole = parseAdminPathRules(['/']);
    assert.equal(isAdminPath(whole, 'GET', []), true);
    assert.equal(isAdminPath(whole, 'GET', ['anything', 'at', 'all']), true);
  });

  it('covers nothing without rules', () => {
    assert.equal(isAdminPath([], 'GET', ['configuration']), false);
  });
});

describe('resolveForwardedTarget', () => {
  it('splits the app and the path within it', () => {
    assert.deepEqual(resolveForwardedTarget(`${APP}/users/42`), { appId: 'app1', segments: ['users', '42'], path: `${APP}/users/42` });
    assert.deepEqual(resolveForwardedTarget(APP), { appId: 'app1', segments: [], path: APP });
    assert.deepEqual(resolveForwardedTarget(`${APP}/`), { appId: 'app1', segments: [], path: APP });
  });

  it('ignores the query string and the fragment', () => {
    assert.deepEqual(segmentsOf(`${APP}/configuration?x=1&next=/../../whoami`), ['configuration']);
    assert.deepEqual(segmentsOf(`${APP}/configuration#/../whoami`), ['configuration']);
    assert.deepEqual(segmentsOf(`${APP}/configuration?`), ['configuration']);
    // A query that does not parse as a path is no reason to refuse.
    assert.deepEqual(segmentsOf(`${APP}/configuration?a=%zz&b=%2F`), ['configuration']);
  });

  it('sees through the spellings an upstream server resolves to the same path', () => {
    const rules = parseAdminPathRules(['/admin']);
    for (const uri of [
      `${APP}/admin`,
      `${APP}/%61dmin`,
      `${APP}/%61%64%6D%69%6E`,
      `${APP}/./admin`,
      `${APP}/x/../admin`,
      `${APP}/x/%2e%2e/admin`,
      `${APP}/x/%2E%2E/admin`,
      `${APP}/%2e/admin`,
      `${APP}//admin`,
      `${APP}/admin/`,
      `${APP}///admin//sub`,
      `/api//apps/app1/admin`,
      `/api/./apps/app1/admin`,
    ]) {
      const target = resolveForwardedTarget(uri);
      assert.equal(target.appId, 'app1', uri);
      assert.equal(isAdminPath(rules, 'GET', target.segments), true, uri);
    }
  });

  it('decodes the AppID too', () => {
    assert.equal(resolveForwardedTarget('/api/apps/%61pp1/whoami').appId, 'app1');
  });

  it('resolves ".." across the AppID like an upstream would', () => {
    assert.equal(resolveForwardedTarget('/api/apps/app1/../app2/whoami').appId, 'app2');
    // RFC 3986: ".." above the root stays at the root.
    assert.deepEqual(resolveForwardedTarget('/../api/apps/app1/x'), { appId: 'app1', segments: ['x'], path: `${APP}/x` });
  });

  it('keeps the decoded path for the /me rule', () => {
    assert.equal(resolveForwardedTarget(`${APP}/users/%6De`).path, `${APP}/users/me`);
    assert.equal(resolveForwardedTarget(`${APP}/users/me?x=1`).path, `${APP}/users/me`);
  });

  it('refuses an encoded slash: it would change the shape of the path', () => {
    assertRefused(`${APP}/a%2Fb`);
    assertRefused(`${APP}/a%2fb`);
    assertRefused(`${APP}/x%2F..%2F..%2Fadmin`);
    assertRefused('/api/apps/app1%2Fconfiguration');
  });

  it('refuses malformed percent-encoding', () => {
    assertRefused(`${APP}/%zz`);
    assertRefused(`${APP}/%`);
    assertRefused(`${APP}/%C3`);
  });

  it('refuses a URI that is not under /api/apps/{appId}', () => {
    for (const uri of [
      '',
      '/',
      '/api',
      '/api/apps',
      '/api/apps/',
      '/api/apps//',
      '/api/other/app1',
      '/API/apps/app1',
      '/whoami',
      'api/apps/app1/whoami',
      'http://host/api/apps/app1/whoami',
      '*',
      '?/api/apps/app1',
      '/api/apps/app1/..',
      '/api/apps/app1/../../apps',
      '/api/apps/./x/..',
    ]) {
      assertRefused(uri);
    }
  });
});
