import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { DEFAULT_RATE_LIMITS } from '../../src/limits/rate-limits.js';
import { DEFAULT_SQLITE_PATH, parseDatabaseUrl } from 'tessera-tokens/internal/store/location.js';

describe('loadConfig', () => {
  it('has the documented defaults for an empty environment', () => {
    assert.deepEqual(loadConfig({}), {
      host: '127.0.0.1',
      port: 8080,
      databaseUrl: undefined,
      logLevel: 'info',
      logFormat: 'auto',
      logRequests: false,
      rateLimits: { ...DEFAULT_RATE_LIMITS, enabled: true, redisUrl: undefined, redisKeyPrefix: 'tessera' },
      demoApp: true,
      portal: true,
      portalSignup: 'invite',
      portalAppsPerDeveloper: 100,
      postgres: { poolSize: 10, connectTimeoutMs: 2_000, queryTimeoutMs: 5_000, staleLimitMs: 2_000, startupRetryMs: 30_000 },
      housekeeping: {
        intervalMs: 60_000,
        eventRetentionMs: 30 * 86_400_000,
        maxEventsPerApp: 100_000,
        maxRefusalsPerApp: 10_000,
        jwtKeyRotationMs: 0,
      },
      shutdownStoreTimeoutMs: 10_000,
      forwardAuthAdminPaths: [],
      trustedProxies: [],
      revokedTokensMaxPerApp: 100_000,
      cacheMemoryMb: 512,
      upgradeFinalizeAfterMs: 600_000,
      http: { headersTimeoutMs: 5_000, requestTimeoutMs: 10_000, keepAliveTimeoutMs: 5_000 },
      publicUrl: undefined,
      keyEncryptionKey: undefined,
      previousKeyEncryptionKey: undefined,
      statusListTtlSeconds: 60,
      webhookDestinations: { allowHttp: false, allowPrivate: false },
      webhookTimeoutMs: 10_000,
      metrics: undefined,
    });
  });

  it('has default limits that do not get in the way of normal use (the contract)', () => {
    const { rateLimits } = loadConfig({});
    assert.ok(rateLimits.tokenRequestsPerAddressPerMinute >= 300, 'a few hundred token requests a minute from one address pass');
    assert.ok(rateLimits.adminFailuresPerAddressPerMinute >= 5, 'a handful of failed admin attempts a minute from one address pass');
    assert.ok(rateLimits.adminFailuresPerAddressPerMinute < 24, 'dozens of failures a minute from one address are throttled');
    assert.ok(
      rateLimits.adminFailuresPerAppPerMinute >= 100 * rateLimits.adminFailuresPerAddressPerMinute,
      "locking an app's admins out takes failures from a hundred addresses",
    );
  });

  it('treats empty and blank values as unset', () => {
    const blank = { HOST: '  ', PORT: '', LOG_LEVEL: ' ', LOG_FORMAT: ' ', LOG_REQUESTS: '', RATE_LIMITS: ' ', DEMO_APP: '' };
    const config = loadConfig(blank);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.port, 8080);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.logFormat, 'auto');
    assert.equal(config.logRequests, false);
    assert.equal(config.rateLimits.enabled, true);
    assert.equal(config.demoApp, true);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      HOST: '0.0.0.0',
      PORT: ' 9000 ',
      DATABASE_URL: 'sqlite:./x.db',
      LOG_LEVEL: 'DEBUG',
      LOG_FORMAT: ' Pretty ',
      LOG_REQUESTS: 'on',
      RATE_LIMITS: 'off',
      RATE_LIMIT_TOKEN_PER_ADDRESS: '50',
      RATE_LIMIT_ADMIN_FAILURES_PER_ADDRESS: '3',
      RATE_LIMIT_ADMIN_FAILURES_PER_APP: '300',
      DEMO_APP: 'off',
      PORTAL: 'off',
      PORTAL_SIGNUP: 'open',
      PORTAL_APPS_PER_DEVELOPER: '25',
      PG_POOL_SIZE: '4',
      PG_CONNECT_TIMEOUT_MS: '750',
      PG_QUERY_TIMEOUT_MS: '1500',
      PG_STALE_LIMIT_MS: '30000',
      PG_STARTUP_TIMEOUT_MS: '0',
      HOUSEKEEPING_INTERVAL_SECONDS: '5',
      JWT_KEY_ROTATION_DAYS: '30',
      EVENTS_RETENTION_DAYS: '7',
      EVENTS_MAX_PER_APP: '1000',
      EVENTS_MAX_REFUSALS_PER_APP: '200',
      SHUTDOWN_STORE_TIMEOUT_MS: '25000',
      FORWARD_AUTH_ADMIN_PATHS: '/configuration, DELETE /objects ,get /reports/',
      REDIS_URL: 'redis://127.0.0.1:6379/2',
      REDIS_KEY_PREFIX: 'staging',
      TRUSTED_PROXIES: '10.0.0.0/8, 192.168.1.7,loopback, ::1, fd00::/8',
      HTTP_HEADERS_TIMEOUT_MS: '2000',
      HTTP_REQUEST_TIMEOUT_MS: '3000',
      HTTP_KEEP_ALIVE_TIMEOUT_MS: '1000',
      REVOKED_TOKENS_MAX_PER_APP: '500',
      CACHE_MEMORY_MB: '64',
      UPGRADE_FINALIZE_AFTER_SECONDS: '90',
      PUBLIC_URL: ' https://Tokens.Example.com/ ',
      KEY_ENCRYPTION_KEY: ' BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc= ',
      KEY_ENCRYPTION_KEY_PREVIOUS: 'CAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg',
      STATUS_LIST_TTL_SECONDS: ' 30 ',
      WEBHOOK_ALLOW_HTTP: 'on',
      WEBHOOK_ALLOW_PRIVATE: '1',
      WEBHOOK_TIMEOUT_SECONDS: '3',
      METRICS_PORT: ' 9464 ',
      METRICS_HOST: ' 10.0.0.5 ',
    });
    assert.deepEqual(config, {
      host: '0.0.0.0',
      port: 9000,
      databaseUrl: 'sqlite:./x.db',
      logLevel: 'debug',
      logFormat: 'pretty',
      logRequests: true,
      rateLimits: {
        enabled: false,
        tokenRequestsPerAddressPerMinute: 50,
        adminFailuresPerAddressPerMinute: 3,
        adminFailuresPerAppPerMinute: 300,
        redisUrl: 'redis://127.0.0.1:6379/2',
        redisKeyPrefix: 'staging',
      },
      demoApp: false,
      portal: false,
      portalSignup: 'open',
      portalAppsPerDeveloper: 25,
      postgres: { poolSize: 4, connectTimeoutMs: 750, queryTimeoutMs: 1_500, staleLimitMs: 30_000, startupRetryMs: 0 },
      housekeeping: {
        intervalMs: 5_000,
        eventRetentionMs: 7 * 86_400_000,
        maxEventsPerApp: 1000,
        maxRefusalsPerApp: 200,
        jwtKeyRotationMs: 30 * 86_400_000,
      },
      shutdownStoreTimeoutMs: 25_000,
      forwardAuthAdminPaths: [
        { method: undefined, segments: ['configuration'] },
        { method: 'DELETE', segments: ['objects'] },
        { method: 'GET', segments: ['reports'] },
      ],
      trustedProxies: ['10.0.0.0/8', '192.168.1.7', 'loopback', '::1', 'fd00::/8'],
      http: { headersTimeoutMs: 2_000, requestTimeoutMs: 3_000, keepAliveTimeoutMs: 1_000 },
      revokedTokensMaxPerApp: 500,
      cacheMemoryMb: 64,
      upgradeFinalizeAfterMs: 90_000,
      publicUrl: 'https://tokens.example.com',
      keyEncryptionKey: Buffer.alloc(32, 7),
      previousKeyEncryptionKey: Buffer.alloc(32, 8),
      statusListTtlSeconds: 30,
      webhookDestinations: { allowHttp: true, allowPrivate: true },
      webhookTimeoutMs: 3_000,
      metrics: { host: '10.0.0.5', port: 9464 },
    });
  });

  it('refuses a KEY_ENCRYPTION_KEY that is not 32 bytes in base64 or base64url, without echoing it', () => {
    for (const value of [
      'short',
      'BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH',
      'not base64 at all!',
      Buffer.alloc(33, 1).toString('base64url'),
    ]) {
      assert.throws(
        () => loadConfig({ KEY_ENCRYPTION_KEY: value }),
        (error: Error) => /KEY_ENCRYPTION_KEY must be 32 random bytes/.test(error.message) && !error.message.includes(value),
      );
    }
    assert.deepEqual(loadConfig({ KEY_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64url') }).keyEncryptionKey, Buffer.alloc(32, 9));
  });

  it('takes PUBLIC_URL with a path prefix, without its trailing slashes, and keeps a port', () => {
    assert.equal(loadConfig({ PUBLIC_URL: 'https://example.com/tessera/' }).publicUrl, 'https://example.com/tessera');
    assert.equal(loadConfig({ PUBLIC_URL: 'http://127.0.0.1:8080' }).publicUrl, 'http://127.0.0.1:8080');
    assert.equal(loadConfig({ PUBLIC_URL: 'https://example.com:443//' }).publicUrl, 'https://example.com');
  });

  it('refuses a PUBLIC_URL that is not an absolute http(s) URL, or has credentials, a query or a fragment, without echoing it', () => {
    for (const value of [
      'tokens.example.com',
      '/api',
      'ftp://example.com',
      'https://user:hunter2@example.com',
      'https://example.com/?a=1',
      'https://example.com/#x',
      'https://example.com?',
      'javascript:alert(1)',
    ]) {
      assert.throws(
        () => loadConfig({ PUBLIC_URL: value }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError, `${value}: ${String(error)}`);
          assert.match(error.message, /PUBLIC_URL/);
          assert.ok(!error.message.includes('hunter2'));
          return true;
        },
      );
    }
  });

  it('refuses a TRUSTED_PROXIES entry that is not an address, a range or a keyword', () => {
    for (const value of ['proxy.local', '10.0.0.0/33', '1.2.3', '::1/129', '10.0.0.0/8/1', 'everything']) {
      assert.throws(
        () => loadConfig({ TRUSTED_PROXIES: value }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError, `${value}: ${String(error)}`);
          assert.match(error.message, /TRUSTED_PROXIES/);
          return true;
        },
      );
    }
  });

  it('refuses a REDIS_URL that is not redis:// and a headers timeout longer than the request timeout', () => {
    assert.throws(() => loadConfig({ REDIS_URL: 'http://127.0.0.1:6379' }), /REDIS_URL/);
    assert.throws(() => loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '20000' }), /HTTP_HEADERS_TIMEOUT_MS/);
  });

  it('reads DATABASE_DIRECT_URL beside a PostgreSQL DATABASE_URL, and refuses it otherwise', () => {
    const pooled = 'postgres://tessera@pgbouncer.internal:6432/tessera';
    const direct = 'postgres://tessera@db.internal:5432/tessera';
    assert.equal(loadConfig({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: direct }).postgres.directUrl, direct);
    assert.equal(loadConfig({ DATABASE_URL: pooled, DATABASE_DIRECT_URL: ' ' }).postgres.directUrl, undefined);
    for (const env of [
      { DATABASE_URL: pooled, DATABASE_DIRECT_URL: 'db.internal:5432' },
      { DATABASE_URL: 'sqlite:./x.db', DATABASE_DIRECT_URL: direct },
      { DATABASE_DIRECT_URL: direct },
    ]) {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && /DATABASE_DIRECT_URL/.test(error.message),
      );
    }
  });

  it('refuses a FORWARD_AUTH_ADMIN_PATHS entry that is not a path prefix', () => {
    for (const value of ['admin', 'GET', 'GET  admin', '/a b', '/%zz', 'GE7 /x']) {
      assert.throws(
        () => loadConfig({ FORWARD_AUTH_ADMIN_PATHS: value }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError, `${value}: ${String(error)}`);
          assert.match(error.message, /FORWARD_AUTH_ADMIN_PATHS/);
          return true;
        },
      );
    }
  });

  it('accepts PORT from 0 to 65535', () => {
    assert.equal(loadConfig({ PORT: '0' }).port, 0);
    assert.equal(loadConfig({ PORT: '65535' }).port, 65535);
  });

  it('refuses an invalid PORT with a ConfigError naming the variable', () => {
    for (const port of ['abc', '-1', '65536', '1.5', '8080x', '0x50', '1e3', '80 80']) {
      assert.throws(
        () => loadConfig({ PORT: port }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError, `${port}: ${String(error)}`);
          assert.match(error.message, /PORT/);
          return true;
        },
      );
    }
  });

  it('refuses a rate limit below 1', () => {
    assert.throws(() => loadConfig({ RATE_LIMIT_TOKEN_PER_ADDRESS: '0' }), ConfigError);
    assert.throws(() => loadConfig({ RATE_LIMIT_ADMIN_FAILURES_PER_ADDRESS: '0' }), ConfigError);
    assert.throws(() => loadConfig({ RATE_LIMIT_ADMIN_FAILURES_PER_APP: '0' }), ConfigError);
  });

  it('reads PORTAL_SIGNUP: invite by default, open when asked, anything else refused', () => {
    assert.equal(loadConfig({}).portalSignup, 'invite');
    assert.equal(loadConfig({ PORTAL_SIGNUP: ' ' }).portalSignup, 'invite');
    assert.equal(loadConfig({ PORTAL_SIGNUP: 'invite' }).portalSignup, 'invite');
    assert.equal(loadConfig({ PORTAL_SIGNUP: ' Open ' }).portalSignup, 'open');
    for (const value of ['on', 'closed', 'yes', 'opened']) {
      assert.throws(() => loadConfig({ PORTAL_SIGNUP: value }), ConfigError, value);
    }
  });

  it('reads PORTAL_APPS_PER_DEVELOPER: 100 by default, 0 (the portal creates none) to 1,000,000, anything else refused', () => {
    assert.equal(loadConfig({}).portalAppsPerDeveloper, 100);
    assert.equal(loadConfig({ PORTAL_APPS_PER_DEVELOPER: ' 0 ' }).portalAppsPerDeveloper, 0);
    assert.equal(loadConfig({ PORTAL_APPS_PER_DEVELOPER: '1000000' }).portalAppsPerDeveloper, 1_000_000);
    for (const value of ['-1', '1000001', '10.5', 'many', '1e3']) {
      assert.throws(() => loadConfig({ PORTAL_APPS_PER_DEVELOPER: value }), ConfigError, value);
    }
  });

  it('reads SHUTDOWN_STORE_TIMEOUT_MS: 10 s by default, 100 ms to 10 minutes, anything else refused', () => {
    assert.equal(loadConfig({}).shutdownStoreTimeoutMs, 10_000);
    assert.equal(loadConfig({ SHUTDOWN_STORE_TIMEOUT_MS: '100' }).shutdownStoreTimeoutMs, 100);
    assert.equal(loadConfig({ SHUTDOWN_STORE_TIMEOUT_MS: '600000' }).shutdownStoreTimeoutMs, 600_000);
    for (const value of ['0', '99', '600001', '5s', '-1', '1.5']) {
      assert.throws(
        () => loadConfig({ SHUTDOWN_STORE_TIMEOUT_MS: value }),
        (error: unknown) =>
          error instanceof ConfigError && /^SHUTDOWN_STORE_TIMEOUT_MS must be a whole number from 100 to 600000/.test(error.message),
      );
    }
  });

  it('parses on/off switches in their usual spellings, case-insensitively', () => {
    for (const on of ['on', 'ON', 'true', 'True', '1', 'yes', ' on ']) {
      assert.equal(loadConfig({ RATE_LIMITS: on }).rateLimits.enabled, true, on);
      assert.equal(loadConfig({ LOG_REQUESTS: on }).logRequests, true, on);
    }
    for (const off of ['off', 'OFF', 'false', 'FALSE', '0', 'no', ' off ']) {
      assert.equal(loadConfig({ RATE_LIMITS: off }).rateLimits.enabled, false, off);
      assert.equal(loadConfig({ DEMO_APP: off }).demoApp, false, off);
    }
  });

  it('refuses an on/off switch with another value', () => {
    for (const value of ['maybe', 'disabled', '2', 'of']) {
      assert.throws(() => loadConfig({ RATE_LIMITS: value }), ConfigError, value);
    }
  });

  it('refuses an unknown LOG_LEVEL', () => {
    assert.throws(() => loadConfig({ LOG_LEVEL: 'verbose' }), ConfigError);
  });

  it('reads LOG_FORMAT auto, json or pretty, and refuses anything else', () => {
    for (const value of ['auto', 'json', 'pretty', 'JSON']) assert.equal(loadConfig({ LOG_FORMAT: value }).logFormat, value.toLowerCase());
    for (const value of ['text', 'plain', 'yes']) {
      assert.throws(() => loadConfig({ LOG_FORMAT: value }), /LOG_FORMAT must be one of auto, json, pretty/, value);
    }
  });

  it('refuses a DATABASE_URL that names no store with a ConfigError, without echoing its credentials', () => {
    for (const url of ['sqlite:', 'mysql://user:hunter2@db/tessera', 'http://user:hunter2@db/']) {
      assert.throws(
        () => loadConfig({ DATABASE_URL: url }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError, `${url}: ${String(error)}`);
          assert.match(error.message, /DATABASE_URL/);
          assert.doesNotMatch(error.message, /hunter2/);
          return true;
        },
      );
    }
  });
});

describe('parseDatabaseUrl', () => {
  const defaultLocation = { backend: 'sqlite', path: resolve(DEFAULT_SQLITE_PATH) };

  it('is the default SQLite file when unset or empty', () => {
    assert.equal(DEFAULT_SQLITE_PATH, './data/tessera.db');
    assert.deepEqual(parseDatabaseUrl(undefined), defaultLocation);
    assert.deepEqual(parseDatabaseUrl(''), defaultLocation);
    assert.deepEqual(parseDatabaseUrl('   '), defaultLocation);
  });

  it('takes a plain file path, resolved', () => {
    assert.deepEqual(parseDatabaseUrl('/var/lib/tessera/t.db'), { backend: 'sqlite', path: '/var/lib/tessera/t.db' });
    assert.deepEqual(parseDatabaseUrl('data/other.db'), { backend: 'sqlite', path: resolve('data/other.db') });
  });

  it('takes sqlite:PATH, relative or absolute (also sqlite:///abs)', () => {
    assert.deepEqual(parseDatabaseUrl('sqlite:./x/t.db'), { backend: 'sqlite', path: resolve('./x/t.db') });
    assert.deepEqual(parseDatabaseUrl('sqlite:/abs/t.db'), { backend: 'sqlite', path: '/abs/t.db' });
    assert.deepEqual(parseDatabaseUrl('sqlite:///abs/t.db'), { backend: 'sqlite', path: '/abs/t.db' });
  });

  it('takes sqlite::memory:', () => {
    assert.deepEqual(parseDatabaseUrl('sqlite::memory:'), { backend: 'sqlite', path: ':memory:' });
  });

  it('refuses sqlite: without a path', () => {
    assert.throws(() => parseDatabaseUrl('sqlite:'));
  });

  it('takes postgres:// and postgresql:// as PostgreSQL, keeping the URL', () => {
    for (const url of ['postgres://u:p@db:5432/tessera', 'postgresql://db/tessera?sslmode=require', 'POSTGRES://db/t']) {
      assert.deepEqual(parseDatabaseUrl(url), { backend: 'postgres', url });
    }
  });

  it('refuses another scheme, without echoing its credentials', () => {
    for (const url of ['mysql://user:hunter2@db/tessera', 'http://user:hunter2@db/', 'file://user:hunter2@x/t.db']) {
      assert.throws(
        () => parseDatabaseUrl(url),
        (error: unknown) => {
          assert.ok(error instanceof Error);
          assert.doesNotMatch(error.message, /hunter2/);
          return true;
        },
        url,
      );
    }
  });
});
