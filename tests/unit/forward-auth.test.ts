import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isAdminPath, parseAdminPathRules, resolveForwardedTarget } from '../../src/auth/forward.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';

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

  it('lower-cases the prefix and drops empty segments', () => {
    assert.deepEqual(parseAdminPathRules(['/Admin/', '//x//Y']), [
      { method: undefined, segments: ['admin'] },
      { method: undefined, segments: ['x', 'y'] },
    ]);
  });

  it('refuses a prefix spelled with percent-encoding, dot segments, ";" or "\\": original URIs cannot be', () => {
    for (const entry of ['/%61dmin', '/a/./b', '/a/../c', '/a;b', '/a\\b']) {
      assert.throws(
        () => parseAdminPathRules([entry]),
        (error: unknown) => error instanceof Error && error.message.includes(entry),
        entry,
      );
    }
  });

  it('reads "/" as the whole app', () => {
    assert.deepEqual(parseAdminPathRules(['/']), [{ method: undefined, segments: [] }]);
  });

  it('reads no entries as no rules', () => {
    assert.deepEqual(parseAdminPathRules([]), []);
  });

  it('refuses an entry that is not a path prefix, naming it', () => {
    for (const entry of ['admin', 'GET admin', 'GET', '', '/a b', 'GET  /a /b', 'GE7 /a', '/a%2Fb', '/%zz']) {
      assert.throws(
        () => parseAdminPathRules(['/fine', entry]),
        (error: unknown) => {
          return error instanceof Error && error.message.includes(`"${entry}"`);
        },
        JSON.stringify(entry),
      );
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

  it('compares segments case-insensitively, as Express routes them by default', () => {
    for (const segment of ['Configuration', 'CONFIGURATION', 'configuratioN']) {
      assert.equal(isAdminPath(rules, 'GET', [segment]), true, segment);
    }
    assert.equal(isAdminPath(rules, 'GET', ['EVENTS', 'Private', '1']), true);
  });

  it('applies a GET rule to HEAD too: Express and Fastify answer HEAD with the GET handler', () => {
    const getRules = parseAdminPathRules(['GET /reports']);
    assert.equal(isAdminPath(getRules, 'HEAD', ['reports']), true);
    assert.equal(isAdminPath(getRules, 'head', ['reports', '1']), true);
    assert.equal(isAdminPath(getRules, 'POST', ['reports']), false);
    assert.equal(isAdminPath(parseAdminPathRules(['HEAD /reports']), 'GET', ['reports']), false);
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
    assert.deepEqual(resolveForwardedTarget(`${APP}/`), { appId: 'app1', segments: [], path: `${APP}/` });
    assert.deepEqual(segmentsOf(`${APP}/admin/`), ['admin']);
  });

  it('ignores the query string', () => {
    assert.deepEqual(segmentsOf(`${APP}/configuration?x=1&next=/../../whoami`), ['configuration']);
    assert.deepEqual(segmentsOf(`${APP}/configuration?`), ['configuration']);
    // A query that does not parse as a path is no reason to refuse.
    assert.deepEqual(segmentsOf(`${APP}/configuration?a=%zz&b=%2F`), ['configuration']);
    assert.equal(resolveForwardedTarget(`${APP}/users/me?x=1`).path, `${APP}/users/me`);
  });

  it('decodes what must be encoded, which every reader decodes alike', () => {
    assert.deepEqual(segmentsOf(`${APP}/files/a%20b/%C3%A9t%C3%A9/%3F%23%25`), ['files', 'a b', 'été', '?#%']);
  });

  it('refuses dot segments, literal or encoded: upstreams resolve them or not', () => {
    for (const uri of [
      `${APP}/./admin`,
      `${APP}/x/../admin`,
      `${APP}/x/%2e%2e/admin`,
      `${APP}/x/%2E%2E/admin`,
      `${APP}/x/.%2e/admin`,
      `${APP}/%2e/admin`,
      `/api/apps/B/files/%2e%2e/%2e%2e/app1/files/x`,
      `/api/apps/B/files/../../app1/files/x`,
      '/api/apps/app1/..',
      '/api/apps/./x/..',
    ]) {
      assertRefused(uri);
    }
  });

  it('refuses percent-encoded characters that need no encoding', () => {
    for (const uri of [
      `${APP}/%61dmin`,
      `${APP}/%61%64%6D%69%6E`,
      `${APP}/users/%6De`,
      '/api/apps/%61pp1/whoami',
      `${APP}/a%7Eb`,
      `${APP}/a%5Fb`,
      `${APP}/a%2Db`,
    ]) {
      assertRefused(uri);
    }
  });

  it('refuses encoded slashes and backslashes, literal backslashes and empty segments', () => {
    for (const uri of [
      `${APP}/a%2Fb`,
      `${APP}/a%2fb`,
      `${APP}/x%2F..%2F..%2Fadmin`,
      '/api/apps/app1%2Fconfiguration',
      `${APP}/a%5Cb`,
      `${APP}/a\\b`,
      `${APP}\\admin`,
      `${APP}//admin`,
      `/api/apps//app1/admin`,
      `${APP}///admin//sub`,
    ]) {
      assertRefused(uri);
    }
  });

  it('refuses ";" path parameters, literal or encoded', () => {
    for (const uri of [`${APP}/admin;x=1`, `${APP}/admin;`, `/api/apps/app1;jsessionid=1/admin`, `${APP}/a%3Bb`, `${APP}/a%3bb`]) {
      assertRefused(uri);
    }
  });

  it('refuses control characters, spaces, non-ASCII, fragments and double encoding', () => {
    for (const uri of [
      `${APP}/a\u0000b`,
      `${APP}/a\tb`,
      `${APP}/a b`,
      `${APP}/a\u007fb`,
      `${APP}/%00`,
      `${APP}/%0a`,
      `${APP}/%7F`,
      `${APP}/é`,
      `${APP}/x#/../admin`,
      `${APP}/%252e%252e`,
      `${APP}/%2561dmin`,
    ]) {
      assertRefused(uri);
    }
  });

  it('refuses malformed percent-encoding', () => {
    assertRefused(`${APP}/%zz`);
    assertRefused(`${APP}/%`);
    assertRefused(`${APP}/%C3`);
    assertRefused(`${APP}/%%41`);
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
      '/api//apps/app1/admin',
      '/api/./apps/app1/admin',
      '/whoami',
      'api/apps/app1/whoami',
      'http://host/api/apps/app1/whoami',
      '*',
      '?/api/apps/app1',
      '/../api/apps/app1/x',
    ]) {
      assertRefused(uri);
    }
  });
});
