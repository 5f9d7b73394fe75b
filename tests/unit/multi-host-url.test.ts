import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { parsePostgresUrl } from 'tessera-tokens/internal/store/postgres/multi-host-url.js';

const SECRET = 's3cr%40t-pw';

describe('multi-host PostgreSQL URLs (libpq)', () => {
  it('reads several hosts in order, with their ports (5432 when none), IPv6 in brackets', () => {
    const parsed = parsePostgresUrl(
      `postgres://tessera:${SECRET}@db1.internal:5433,10.0.0.2,[2001:db8::7]:6432,[::1]/tessera?sslmode=require`,
    );
    assert.deepEqual(parsed.hosts, [
      { host: 'db1.internal', port: 5433, label: 'db1.internal:5433' },
      { host: '10.0.0.2', port: 5432, label: '10.0.0.2:5432' },
      { host: '2001:db8::7', port: 6432, label: '[2001:db8::7]:6432' },
      { host: '::1', port: 5432, label: '[::1]:5432' },
    ]);
    assert.equal(parsed.multiHost, true);
    // pg gets the first host, the credentials and every other parameter as written.
    assert.equal(parsed.url, `postgres://tessera:${SECRET}@db1.internal:5433/tessera?sslmode=require`);
  });

  it('with several hosts, stays on a host that takes writes unless told otherwise (libpq would take any)', () => {
    assert.equal(parsePostgresUrl('postgres://u@h1,h2/db').targetSessionAttrs, 'read-write');
    assert.equal(parsePostgresUrl('postgresql://u@h1,h2/db?target_session_attrs=any').targetSessionAttrs, 'any');
    assert.equal(parsePostgresUrl('postgres://u@h1,h2/db?target_session_attrs=primary').targetSessionAttrs, 'primary');
    assert.equal(parsePostgresUrl('postgres://u@h1,h2/db?target_session_attrs=read-write').targetSessionAttrs, 'read-write');
  });

  it('takes target_session_attrs and connect_timeout out of the URL pg gets, and keeps the rest as written', () => {
    const parsed = parsePostgresUrl(
      'postgres://u@h1:5432,h2:5433/db?application_name=a%20b&target_session_attrs=read-write&connect_timeout=2&sslmode=disable',
    );
    assert.equal(parsed.connectTimeoutMs, 2_000);
    assert.equal(parsed.url, 'postgres://u@h1:5432/db?application_name=a%20b&sslmode=disable');
    assert.equal(parsePostgresUrl('postgres://u@h1,h2/db?connect_timeout=0').connectTimeoutMs, undefined, '0: no bound of its own');
    assert.equal(parsePostgresUrl('postgres://u@h1,h2/db').connectTimeoutMs, undefined);
  });

  it("leaves a URL with one host and neither parameter exactly as it was, for pg alone (today's behaviour)", () => {
    for (const url of [
      'postgres://tessera:secret@db.internal:5432/tessera',
      'postgresql://u@127.0.0.1/db?sslmode=no-verify',
      'postgres:///tessera?host=/var/run/postgresql',
      'postgres://u@[::1]:5433/db',
    ]) {
      const parsed = parsePostgresUrl(url);
      assert.equal(parsed.multiHost, false, url);
      assert.equal(parsed.url, url);
      assert.equal(parsed.targetSessionAttrs, 'any', url);
      assert.equal(parsed.hosts.length, 1, url);
      assert.equal(parsed.hosts[0]!.host, undefined, 'pg reads the one host itself');
    }
  });

  it('honours target_session_attrs and connect_timeout with a single host too', () => {
    const parsed = parsePostgresUrl('postgres://u@db:5433/x?target_session_attrs=read-write&connect_timeout=3');
    assert.equal(parsed.multiHost, true);
    assert.equal(parsed.targetSessionAttrs, 'read-write');
    assert.equal(parsed.connectTimeoutMs, 3_000);
    assert.equal(parsed.url, 'postgres://u@db:5433/x');
    assert.deepEqual(parsed.hosts, [{ host: undefined, port: undefined, label: 'db:5433' }]);
  });

  it('reads percent-encoded socket directories as hosts', () => {
    const parsed = parsePostgresUrl('postgres://u@%2Fvar%2Frun%2Fpostgresql:5432,db2/x');
    assert.deepEqual(parsed.hosts[0], { host: '/var/run/postgresql', port: 5432, label: '/var/run/postgresql:5432' });
  });

  it('refuses the target_session_attrs that would keep a writing service on a standby, saying why', () => {
    for (const value of ['read-only', 'standby', 'prefer-standby']) {
      assert.throws(
        () => parsePostgresUrl(`postgres://u:${SECRET}@h1,h2/db?target_session_attrs=${value}`),
        (error: Error) =>
          error.message.startsWith(`DATABASE_URL: target_session_attrs=${value} would keep Tessera on`) &&
          /neither write/.test(error.message) &&
          /read-write/.test(error.message),
      );
    }
  });

  const refused: [string, RegExp][] = [
    [`postgres://u:${SECRET}@h1,,h2/db`, /^DATABASE_URL names an empty host in its list of hosts\.$/],
    [`postgres://u:${SECRET}@h1,/db`, /empty host/],
    [`postgres://u:${SECRET}@h1:5432,:5433/db`, /^DATABASE_URL: ":5433" has no host name\.$/],
    [`postgres://u:${SECRET}@h1:5432,h2:99999/db`, /^DATABASE_URL: the port of "h2:99999" must be a number from 1 to 65535\.$/],
    [`postgres://u:${SECRET}@h1:5432,h2:0/db`, /port of "h2:0"/],
    [`postgres://u:${SECRET}@h1:5432,h2:54x/db`, /port of "h2:54x"/],
    [`postgres://u:${SECRET}@h1,[not-v6]:5432/db`, /^DATABASE_URL: "\[not-v6\]:5432" is not an IPv6 address in brackets\.$/],
    [`postgres://u:${SECRET}@h1,h 2/db`, /"h 2" is not a host name/],
    [
      `postgres://u:${SECRET}@h1,h2/db?target_session_attrs=writable`,
      /^DATABASE_URL: target_session_attrs must be read-write, primary or any; got "writable"\.$/,
    ],
    [
      `postgres://u:${SECRET}@h1,h2/db?connect_timeout=2.5`,
      /^DATABASE_URL: connect_timeout must be a whole number of seconds \(0 for none\); got "2\.5"\.$/,
    ],
    [`postgres://u:${SECRET}@h1,h2/db?connect_timeout=-1`, /connect_timeout must be a whole number/],
    [`postgres://u:${SECRET}@h1,h2/db?host=h3`, /^DATABASE_URL names several hosts: it may not also set \?host=\.$/],
    [`postgres://u:${SECRET}@h1,h2/db?port=5433`, /may not also set \?port=/],
    [`postgres://u:${SECRET}@/db?host=h1,h2&port=5432,5433`, /write several hosts in the URL itself/],
    [`postgres://u:${SECRET}@h1,h%zz/db`, /^DATABASE_URL has a bad percent-escape\.$/],
  ];

  it('refuses a bad list of hosts or a bad parameter with a message that names the setting, never the password', () => {
    for (const [url, message] of refused) {
      assert.throws(
        () => parsePostgresUrl(url),
        (error: Error) => {
          assert.match(error.message, message, url);
          assert.ok(!error.message.includes('s3cr'), `the password is not repeated: ${error.message}`);
          return true;
        },
      );
    }
  });

  it('is a configuration error at start-up, for DATABASE_URL and DATABASE_DIRECT_URL, without the password', () => {
    const cases: Record<string, string>[] = [
      { DATABASE_URL: `postgres://u:${SECRET}@h1,h2/db?target_session_attrs=standby` },
      { DATABASE_URL: `postgres://u:${SECRET}@h1:5432,h2:70000/db` },
      { DATABASE_URL: 'postgres://u@pgbouncer:6432/db', DATABASE_DIRECT_URL: `postgres://u:${SECRET}@h1,,h2/db` },
      {
        DATABASE_URL: 'postgres://u@pgbouncer:6432/db',
        DATABASE_DIRECT_URL: `postgres://u:${SECRET}@h1,h2/db?target_session_attrs=read-only`,
      },
    ];
    for (const env of cases) {
      assert.throws(
        () => loadConfig(env),
        (error: Error) => {
          assert.ok(error instanceof ConfigError, String(error));
          assert.match(error.message, env.DATABASE_DIRECT_URL === undefined ? /^DATABASE_URL/ : /^DATABASE_DIRECT_URL/);
          assert.ok(!error.message.includes('s3cr'), error.message);
          return true;
        },
      );
    }
    const config = loadConfig({
      DATABASE_URL: 'postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write&connect_timeout=2',
      DATABASE_DIRECT_URL: 'postgres://u@h1:5432,h2:5433/db',
    });
    assert.equal(config.databaseUrl, 'postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write&connect_timeout=2');
    assert.equal(config.postgres.directUrl, 'postgres://u@h1:5432,h2:5433/db');
  });

  it('never crashes on any string: it reads it or throws an Error', () => {
    const pieces = [
      'postgres://',
      'u:p@',
      'h1',
      ':',
      '5432',
      ',',
      '[',
      ']',
      '::1',
      '/',
      'db',
      '?',
      '&',
      '=',
      'target_session_attrs',
      'connect_timeout',
      '%',
      '@',
      '#',
    ];
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 3_000; round++) {
      let url = 'postgres://';
      const length = 1 + Math.floor(random() * 12);
      for (let i = 0; i < length; i++) url += pieces[Math.floor(random() * pieces.length)];
      try {
        const parsed = parsePostgresUrl(url);
        assert.ok(parsed.hosts.length >= 1, url);
      } catch (error) {
        assert.ok(error instanceof Error && !(error instanceof TypeError) && !(error instanceof RangeError), `${url}: ${String(error)}`);
      }
    }
  });
});
