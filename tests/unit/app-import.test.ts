import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_APP_CONFIGURATION } from 'tessera-tokens/internal/apps/app.js';
import { clientSecretWeakness, MAX_IMPORT_LINE_BYTES, MAX_LISTED_PROBLEMS, parseImportFile } from '../../src/apps/import.js';
import { randomBytes } from 'node:crypto';
import { generateClientSecret } from '../../src/apps/secret-format.js';

// The lines of `tessera apps import` as the domain reads them, before any store is asked.

const KEYS = {
  appId: '0a1b2c3d',
  appKey: '00112233445566778899aabbccddeeff',
  clientId: 'ffeeddccbbaa99887766554433221100',
  clientSecret: '3f9c0a7e5d21b84c6e0f9a3d7b52c81e04a6d9f3c2b7e15a8d0c4f6b39e2a71d',
};

const parse = (text: string) => parseImportFile(Buffer.from(text));
const messagesOf = (text: string) => parse(text).problems.map((problem) => `${problem.line}: ${problem.message}`);

describe('parseImportFile: the lines of an import', () => {
  it('reads an app in either key format, with the defaults for what a line leaves out', () => {
    const tessera = { ...KEYS, appId: '0a1b2c3d4e5f6a7b', clientId: 'aa'.repeat(16), clientSecret: generateClientSecret() };
    const parsed = parse(`${JSON.stringify({ name: ' Shop ', ...KEYS })}\n${JSON.stringify({ name: 'Blog', ...tessera, owner: null })}\n`);
    assert.deepEqual(parsed.problems, []);
    assert.equal(parsed.lines, 2);
    assert.deepEqual(
      parsed.apps.map((app) => [app.line, app.name, app.appId, app.ownerEmail, app.configuration]),
      [
        [1, 'Shop', KEYS.appId, null, DEFAULT_APP_CONFIGURATION],
        [2, 'Blog', tessera.appId, null, DEFAULT_APP_CONFIGURATION],
      ],
    );
  });

  it('forgives a byte order mark, CRLF line ends and blank lines, and counts them', () => {
    const parsed = parse(`\uFEFF${JSON.stringify({ name: 'A', ...KEYS })}\r\n  \r\n\n`);
    assert.deepEqual(parsed.problems, []);
    assert.equal(parsed.apps.length, 1);
    assert.equal(parsed.lines, 3);
    assert.equal(parsed.blankLines, 2);
  });

  it('normalises the owner and reads the configuration as the configuration API does', () => {
    const [app] = parse(
      JSON.stringify({
        name: 'A',
        ...KEYS,
        owner: ' Ada@Example.COM ',
        configuration: { anonymousTokenMaxLifetimeSeconds: 60, allowedOrigins: ['HTTPS://App.Example.com:443'] },
      }),
    ).apps;
    assert.equal(app?.ownerEmail, 'ada@example.com');
    assert.deepEqual(app?.configuration, {
      ...DEFAULT_APP_CONFIGURATION,
      anonymousTokenMaxLifetimeSeconds: 60,
      allowedOrigins: ['https://app.example.com'],
    });
  });

  it('refuses keys in any other format, upper case included, without ever repeating a ClientSecret', () => {
    const badSecret = 'ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789';
    const messages = messagesOf(
      JSON.stringify({ name: 'A', appId: '0A1B2C3D', appKey: 'short', clientId: KEYS.appKey.toUpperCase(), clientSecret: badSecret }),
    );
    assert.equal(messages.length, 4, messages.join('\n'));
    assert.ok(messages.every((message) => message.startsWith('1: ')));
    assert.ok(!messages.join('\n').includes(badSecret));
  });

  it('refuses a ClientSecret anyone could guess, and a tessera_ secret whose checksum is wrong, never repeating either', () => {
    const weak = [
      '0'.repeat(64),
      'deadbeef'.repeat(8),
      '0123456789abcdef'.repeat(4),
      'ab'.repeat(32),
      `${'a'.repeat(10)}${KEYS.clientSecret.slice(10)}`,
      '0101010101010101232323234545454567676767010101012323232345454545',
    ];
    const made = generateClientSecret();
    const mistyped = `${made.slice(0, 20)}${made[20] === 'A' ? 'B' : 'A'}${made.slice(21)}`;
    for (const secret of [...weak, mistyped]) {
      const messages = messagesOf(JSON.stringify({ name: 'A', ...KEYS, clientSecret: secret }));
      assert.equal(messages.length, 1, `${secret}: ${messages.join('; ')}`);
      assert.match(
        messages[0]!,
        secret === mistyped ? /^1: clientSecret starts with tessera_ but its checksum is wrong/ : /^1: clientSecret is too easy to guess/,
      );
      assert.ok(!messages[0]!.includes(secret));
    }
    // Random secrets pass, whatever their form.
    for (let i = 0; i < 2_000; i++) assert.equal(clientSecretWeakness(randomBytes(32).toString('hex')), null);
    for (let i = 0; i < 200; i++) assert.equal(clientSecretWeakness(generateClientSecret()), null);
  });

  it(`lists at most ${MAX_LISTED_PROBLEMS} problems and keeps no app once the file is refused: memory bounded by the problems, not the lines`, () => {
    const lines = 200_000;
    const parsed = parseImportFile(Buffer.from('{}\n'.repeat(lines)));
    assert.equal(parsed.lines, lines);
    assert.equal(parsed.problems.length, MAX_LISTED_PROBLEMS);
    assert.equal(parsed.unlistedProblems, lines - MAX_LISTED_PROBLEMS);
    const mixed = parseImportFile(Buffer.from(`${'{}\n'.repeat(MAX_LISTED_PROBLEMS + 1)}${JSON.stringify({ name: 'A', ...KEYS })}\n`));
    assert.deepEqual(mixed.apps, [], 'an app after the listed problems is not kept');
  });

  it('refuses an AppID or a ClientID that a line before has, naming that line', () => {
    const first = { name: 'A', ...KEYS };
    const sameAppId = { ...first, clientId: 'cc'.repeat(16) };
    const sameClientId = { ...first, appId: 'deadbeef' };
    assert.deepEqual(messagesOf([first, sameAppId, sameClientId].map((line) => JSON.stringify(line)).join('\n')), [
      `2: appId "${KEYS.appId}" is on line 1 already.`,
      `3: clientId "${KEYS.clientId}" is on line 1 already.`,
    ]);
  });

  it('refuses what is not one JSON object of known fields, without quoting the line', () => {
    const secretInBrokenJson = `{"name": "A", "clientSecret": "${KEYS.clientSecret}" oops}`;
    const messages = messagesOf([secretInBrokenJson, '[]', JSON.stringify({ name: 'A', ...KEYS, region: 'eu' })].join('\n'));
    assert.equal(messages.length, 3, messages.join('\n'));
    assert.match(messages[0]!, /^1: The line is not JSON/);
    assert.ok(!messages[0]!.includes(KEYS.clientSecret));
    assert.match(messages[1]!, /^2: The line must be one JSON object/);
    assert.match(messages[2]!, /^3: Unknown field "region"/);
  });

  it('refuses a line over the limit, and one that is not UTF-8', () => {
    const long = JSON.stringify({ name: 'x'.repeat(MAX_IMPORT_LINE_BYTES), ...KEYS });
    const parsed = parseImportFile(Buffer.concat([Buffer.from(`${long}\n`), Buffer.from([0xff, 0xfe, 0x0a])]));
    assert.deepEqual(
      parsed.problems.map((problem) => problem.line),
      [1, 2],
    );
    assert.match(parsed.problems[0]!.message, new RegExp(`at most ${MAX_IMPORT_LINE_BYTES}`));
    assert.match(parsed.problems[1]!.message, /not UTF-8/);
  });

  it('says that the ClientSecret is what an exported line lacks', () => {
    const { clientSecret: _, ...exported } = KEYS;
    assert.deepEqual(messagesOf(JSON.stringify({ name: 'A', ...exported, owner: null, configuration: DEFAULT_APP_CONFIGURATION })), [
      "1: clientSecret is missing: export does not write it (it is kept only as a digest); add the app's ClientSecret.",
    ]);
  });
});
