import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig, MAX_SECRET_FILE_BYTES, SECRET_SETTINGS } from '../../src/config.js';

// A setting that holds a secret may be read from the file its `_FILE` twin names, as container
// images do (Docker and Kubernetes secrets, systemd credentials).

const PASSWORD = 'hunter2-in-a-file';
const POSTGRES_URL = `postgres://tessera:${PASSWORD}@db.internal:5432/tessera`;

describe('secret settings read from files (X_FILE)', () => {
  let dir: string;
  let files = 0;
  const fileOf = (content: string | Uint8Array) => {
    const path = join(dir, `secret-${++files}`);
    writeFileSync(path, content);
    return path;
  };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-secret-files-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** The ConfigError `env` gets, checked to name `names` and never to hold the password. */
  const refusal = (env: NodeJS.ProcessEnv, ...names: (string | RegExp)[]): string => {
    let message = '';
    assert.throws(
      () => loadConfig(env),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError, String(error));
        message = error.message;
        return true;
      },
    );
    for (const name of names) assert.match(message, typeof name === 'string' ? new RegExp(name) : name);
    assert.ok(!message.includes(PASSWORD), `the secret is never printed: ${message}`);
    return message;
  };

  it('holds the settings with secrets: the database URLs, Redis, the key encryption keys and the SMTP server', () => {
    assert.deepEqual(
      [...SECRET_SETTINGS],
      ['DATABASE_URL', 'DATABASE_DIRECT_URL', 'REDIS_URL', 'KEY_ENCRYPTION_KEY', 'KEY_ENCRYPTION_KEY_PREVIOUS', 'SMTP_URL'],
    );
  });

  it('reads each from its file, without one trailing newline (LF or CRLF)', () => {
    const config = loadConfig({
      DATABASE_URL_FILE: fileOf(`${POSTGRES_URL}\n`),
      DATABASE_DIRECT_URL_FILE: fileOf(`${POSTGRES_URL.replace('db.internal', 'direct.internal')}\r\n`),
      REDIS_URL_FILE: fileOf(`redis://:${PASSWORD}@redis.internal:6379`),
      KEY_ENCRYPTION_KEY_FILE: fileOf(`${Buffer.alloc(32, 5).toString('base64')}\n`),
    });
    assert.equal(config.databaseUrl, POSTGRES_URL);
    assert.deepEqual(config.keyEncryptionKey, Buffer.alloc(32, 5));
    assert.equal(config.postgres.directUrl, POSTGRES_URL.replace('db.internal', 'direct.internal'));
    assert.equal(config.rateLimits.redisUrl, `redis://:${PASSWORD}@redis.internal:6379`);
  });

  it('takes a SQLite path from a file as from the variable', () => {
    const path = join(dir, 'store.db');
    assert.equal(loadConfig({ DATABASE_URL_FILE: fileOf(`sqlite:${path}\n`) }).databaseUrl, `sqlite:${path}`);
  });

  it('treats a blank X_FILE as unset, and leaves X alone then', () => {
    assert.equal(loadConfig({ DATABASE_URL_FILE: '  ', DATABASE_URL: POSTGRES_URL }).databaseUrl, POSTGRES_URL);
    assert.equal(loadConfig({ DATABASE_URL_FILE: '' }).databaseUrl, undefined);
  });

  it('refuses X and X_FILE both set, naming both', () => {
    const path = fileOf(POSTGRES_URL);
    for (const name of SECRET_SETTINGS) {
      refusal({ [name]: POSTGRES_URL, [`${name}_FILE`]: path }, `${name} and ${name}_FILE are both set`);
    }
  });

  it('refuses a missing file, a directory and an unreadable file, naming the variable and the path', () => {
    const missing = join(dir, 'no-such-file');
    refusal({ DATABASE_URL_FILE: missing }, 'DATABASE_URL_FILE', missing, 'no such file');
    const directory = join(dir, 'a-directory');
    mkdirSync(directory);
    refusal({ REDIS_URL_FILE: directory }, 'REDIS_URL_FILE', directory, 'is a directory');
    if (process.getuid?.() !== 0) {
      // root reads whatever the mode says.
      const locked = fileOf(POSTGRES_URL);
      chmodSync(locked, 0o000);
      refusal({ DATABASE_URL_FILE: locked }, 'DATABASE_URL_FILE', locked, 'permission denied');
    }
  });

  it('refuses an empty file, one of only a newline, and one of several lines', () => {
    for (const content of ['', '\n', '  \r\n']) {
      const path = fileOf(content);
      refusal({ DATABASE_URL_FILE: path }, 'DATABASE_URL_FILE', path, 'is empty');
    }
    const twoLines = fileOf(`${POSTGRES_URL}\n${POSTGRES_URL}\n`);
    refusal({ DATABASE_URL_FILE: twoLines }, 'DATABASE_URL_FILE', 'several lines');
    const twoNewlines = fileOf(`${POSTGRES_URL}\n\n`);
    refusal({ DATABASE_URL_FILE: twoNewlines }, 'DATABASE_URL_FILE', 'several lines');
  });

  it(`refuses a file over ${MAX_SECRET_FILE_BYTES / 1024} KiB, and one that is not UTF-8`, () => {
    assert.equal(MAX_SECRET_FILE_BYTES, 64 * 1024);
    const atLimit = `sqlite:${join(dir, 'x'.repeat(MAX_SECRET_FILE_BYTES - dir.length - 'sqlite:/'.length))}`;
    assert.equal(atLimit.length, MAX_SECRET_FILE_BYTES);
    assert.equal(loadConfig({ DATABASE_URL_FILE: fileOf(atLimit) }).databaseUrl, atLimit);
    const large = fileOf(`${PASSWORD}${'x'.repeat(MAX_SECRET_FILE_BYTES)}`);
    refusal({ DATABASE_URL_FILE: large }, 'DATABASE_URL_FILE', large, /larger than 64 KiB/);
    const binary = fileOf(Uint8Array.from([0x70, 0xff, 0xfe, 0x00]));
    refusal({ DATABASE_URL_FILE: binary }, 'DATABASE_URL_FILE', binary, 'not UTF-8');
  });

  it("checks a value read from a file as the variable's, says where it came from, and never repeats it", () => {
    const mysql = fileOf(`mysql://tessera:${PASSWORD}@db/tessera\n`);
    const message = refusal(
      { DATABASE_URL_FILE: mysql },
      /^DATABASE_URL must be/,
      `DATABASE_URL was read from ${mysql} \\(DATABASE_URL_FILE\\)`,
    );
    assert.doesNotMatch(message, /mysql:/);
    const redis = fileOf(`http://:${PASSWORD}@redis\n`);
    refusal({ REDIS_URL_FILE: redis }, /^REDIS_URL must be a redis:\/\//, `REDIS_URL was read from ${redis}`);
    // DATABASE_DIRECT_URL needs a PostgreSQL DATABASE_URL: both are named with their sources.
    const direct = fileOf(POSTGRES_URL);
    refusal({ DATABASE_DIRECT_URL_FILE: direct }, 'DATABASE_DIRECT_URL is for PostgreSQL', `DATABASE_DIRECT_URL was read from ${direct}`);
  });
});
