import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ERROR_STATUS } from 'tessera-tokens/internal/errors.js';
import { errorProblems } from '../helpers/assert.js';
import { basic, bearer, request, type JsonResponse } from '../helpers/http.js';
import { rawHttp, type RawResponse } from '../helpers/raw-http.js';
import { serverForSuite, type TestServer } from '../helpers/server.js';

/**
 * Property-based tests of the token endpoints through a real listening server: thousands of generated
 * requests, valid and not. Whatever is sent, the answer is never a 5xx, every error is the contract's
 * (shape, status of its code, challenge headers) and never echoes the ClientSecret; and any valid request,
 * however it is spelled, gets a token that works.
 *
 * The seed is fixed so that a failure can be replayed; `FC_SEED=<n>` runs another one.
 */

const SEED = Number(process.env.FC_SEED ?? 20_251_104);
const NEVER_EXPIRES_IN = 2147483646;
/** The largest instant a JavaScript Date can hold (src/tokens/expiry.ts). */
const MAX_INSTANT = 8_640_000_000_000_000;
const REQUEST_TIMEOUT_MS = 5_000;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{1,512}$/;
/** A marker planted in generated secrets: no answer may ever contain it. */
const CANARY = 'canary7c1f';

/** Statuses that docs/decisions.md gives codes of another status: Node-level refusals before any route. */
const DOCUMENTED_STATUS_EXCEPTIONS: Record<number, string[]> = {
  408: ['invalid_request'],
  417: ['invalid_request'],
  431: ['REQUEST_TOO_LARGE'],
};
const CHALLENGES: Record<string, RegExp> = {
  invalid_client: /^Basic\b/,
  INVALID_TOKEN: /^Bearer error="invalid_token"/,
  UNAUTHORIZED: /Basic.*Bearer|Bearer.*Basic/,
};

const server = serverForSuite();

/** A request as generated: sent by fetch when fetch can send it, byte for byte over a socket otherwise. */
interface GeneratedRequest {
  method: string;
  path: string;
  headers: [string, string][];
  body: Uint8Array | undefined;
  /** Send over a raw socket even when fetch could. */
  raw: boolean;
}

type Keys = TestServer['app'];

// ---- generators of parts --------------------------------------------------------------------------

/** Any Unicode code point but the surrogates, as a string. (fast-check's own `unit: 'binary'` builds a table of ~80 MB.) */
const codePoint = fc.integer({ min: 0, max: 0x10ffff - 0x800 }).map((n) => String.fromCodePoint(n < 0xd800 ? n : n + 0x800));
// prettier-ignore
const special = fc.constantFrom('\0', '%', '%00', '%zz', '%25', '+', '&', '=', ':', '"', '\\', '\u2028', '\uFEFF', '\uD800', 'é', '名', '😀', '\r', '\n', ' ', '\t', '\x7f');
/** Strings with unicode, NUL, '%', lone surrogates, control characters. */
const nastyString = (maxLength = 40) => fc.string({ unit: fc.oneof(special, codePoint, fc.constantFrom('a', 'b', '0')), maxLength });

/** JSON literals for expiresAt, including ones JSON.stringify cannot produce. */
function expiresAtLiteral(now: number): fc.Arbitrary<string> {
  return fc.oneof(
    // prettier-ignore
    fc.constantFrom(
      '0', '-0', '-1', '1', '0.5', '1.5', '1e400', '-1e400', '1e-400', '1E20', '9007199254740991', '9007199254740992',
      '9007199254740993', '123456789012345678901234567890', `${MAX_INSTANT}`, `${MAX_INSTANT + 1}`, 'null', 'true', '"1"',
      `"${now + 60_000}"`, '[]', '{}', `[${now + 60_000}]`, 'NaN', 'Infinity', '0x10', '01', '+1', '.5', '1.', '-',
    ),
    fc.integer().map(String),
    fc.double().map((value) => (Number.isFinite(value) ? String(value) : '0')),
    fc.integer({ min: -10_000_000, max: 10_000_000 }).map((offset) => String(now + offset)),
    fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map(String),
  );
}

/** A value for a known field: right or wrong type, right or wrong credential. */
function fieldValue(keys: Keys): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constantFrom('client_credentials', keys.appId, keys.clientId, keys.clientSecret, keys.appKey, '', `${CANARY}-secret`),
    fc.jsonValue({ maxDepth: 2 }),
    nastyString(),
    fc.string({ minLength: 250, maxLength: 600 }),
    fc.constant(null),
  );
}

const KNOWN_FIELDS = ['grant_type', 'client_id', 'client_secret', 'expiresAt'] as const;
const fieldName = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...KNOWN_FIELDS) },
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'scope', 'token', 'GRANT_TYPE', 'client_id ', ''),
  nastyString(12),
);

/** A JSON object body of known fields with values of random types, unknown fields, odd literals. */
function jsonObjectBody(keys: Keys, now: number): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.array(fc.tuple(fieldName, fieldValue(keys)), { maxLength: 7 }),
      fc.option(expiresAtLiteral(now), { nil: undefined }),
      fc.boolean(),
    )
    .map(([fields, expiresAt, pretty]) => {
      // Written by hand so that names may repeat and `__proto__` is a real key of the JSON text.
      const members = fields.map(([name, value]) => `${JSON.stringify(name)}:${JSON.stringify(value) ?? 'null'}`);
      if (expiresAt !== undefined) members.push(`"expiresAt":${expiresAt}`);
      return pretty ? `{\n  ${members.join(',\n  ')}\n}` : `{${members.join(',')}}`;
    });
}

/** A form body: known and unknown fields, repeated ones, raw '%' and unicode, broken escapes. */
function formBody(keys: Keys, now: number): fc.Arbitrary<string> {
  const value = fc.oneof(
    fieldValue(keys).map((v) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''))),
    expiresAtLiteral(now),
  );
  const pair = fc
    .tuple(fieldName, value, fc.boolean())
    .map(([name, v, encode]) => (encode ? new URLSearchParams([[name, v]]).toString() : `${name}=${v}`));
  return fc.array(pair, { maxLength: 7 }).map((pairs) => pairs.join('&'));
}

/**
 * A valid admin or anonymous request with one or two fields removed or replaced, and maybe an odd
 * expiresAt: reaches the credential and expiry checks that random bodies rarely get past.
 */
function nearlyValidBody(keys: Keys, now: number): fc.Arbitrary<string> {
  return fc
    .record({
      admin: fc.boolean(),
      form: fc.boolean(),
      changes: fc.array(fc.tuple(fc.constantFrom(...KNOWN_FIELDS), fc.option(fieldValue(keys), { nil: undefined })), { maxLength: 2 }),
      expiresAt: fc.option(expiresAtLiteral(now), { nil: undefined }),
    })
    .map(({ admin, form, changes, expiresAt }) => {
      const fields = new Map<string, unknown>([
        ['grant_type', 'client_credentials'],
        ['client_id', admin ? keys.clientId : keys.appId],
        ['client_secret', admin ? keys.clientSecret : keys.appKey],
      ]);
      for (const [name, value] of changes) {
        if (value === undefined) fields.delete(name);
        else fields.set(name, value);
      }
      if (form) {
        const params = new URLSearchParams(
          [...fields].map(([name, value]): [string, string] => [name, typeof value === 'string' ? value : (JSON.stringify(value) ?? '')]),
        );
        if (expiresAt !== undefined) params.append('expiresAt', expiresAt);
        return params.toString();
      }
      const members = [...fields].map(([name, value]) => `${JSON.stringify(name)}:${JSON.stringify(value) ?? 'null'}`);
      if (expiresAt !== undefined) members.push(`"expiresAt":${expiresAt}`);
      return `{${members.join(',')}}`;
    });
}

function body(keys: Keys, now: number): fc.Arbitrary<Uint8Array | undefined> {
  const text = fc.oneof(
    { weight: 5, arbitrary: nearlyValidBody(keys, now) },
    { weight: 4, arbitrary: jsonObjectBody(keys, now) },
    { weight: 3, arbitrary: formBody(keys, now) },
    { weight: 2, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value)) },
    nastyString(80),
    fc.constantFrom('', '{', '}', 'null', '[]', '{"a":', '\uFEFF{}', '{"grant_type":"client_credentials"}x'),
    fc
      .tuple(jsonObjectBody(keys, now), fc.integer({ min: 4000, max: 9000 }))
      .map(([json, size]) => json.slice(0, -1) + `,"pad":"${'x'.repeat(size)}"}`),
  );
  return fc.oneof(
    { weight: 8, arbitrary: text.map((t) => new Uint8Array(Buffer.from(t, 'utf8'))) },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 600 }) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

const contentType = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/x-www-form-urlencoded',
      'application/x-www-form-urlencoded; charset=UTF-8',
      'application/vnd.kii.OauthTokenRequest+json',
      'application/vnd.kii.oauthtokenrequest+json',
    ),
  },
  fc
    .tuple(
      fc.constantFrom('application/json', 'application/x-www-form-urlencoded', 'application/vnd.kii.OauthTokenRequest+json'),
      nastyString(20),
    )
    .map(([type, parameter]) => `${type}; ${parameter}`),
  // prettier-ignore
  fc.constantFrom(
    'text/plain', 'multipart/form-data; boundary=x', 'application/xml', '', '*/*', 'application/json, text/plain',
    'application/jsonx', ' application/json', 'application', 'json', 'application/x-www-form-urlencoded;;;', 'APPLICATION/JSON',
  ),
  nastyString(30),
);

function authorization(keys: Keys): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: nastyString(20).map((password) => basic(keys.appId, password)) },
    fc.tuple(nastyString(20), nastyString(20)).map(([user, password]) => basic(user, password)),
    fc.constantFrom(
      basic(keys.clientId, keys.clientSecret),
      basic(keys.clientId, `${CANARY}-basic`),
      basic(keys.appKey, keys.clientSecret),
    ),
    fc.string({ maxLength: 80 }).map((token) => bearer(token)),
    fc.string({ maxLength: 40 }).map((token) => bearer(`${CANARY}${token}`)),
    fc
      .tuple(fc.constantFrom('Basic', 'basic', 'BASIC', 'Bearer', 'Digest', 'Token', ''), nastyString(40))
      .map(([scheme, rest]) => `${scheme} ${rest}`),
    fc.base64String({ maxLength: 60 }).map((value) => `Basic ${value}`),
    nastyString(60),
    fc.constantFrom(`Basic ${'A'.repeat(3000)}`, `Bearer ${'a'.repeat(3000)}`, `Basic ${'QQ=='.repeat(600)}`),
  );
}

function appSegment(keys: Keys): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constant(keys.appId) },
    fc.stringMatching(/^[A-Za-z0-9_-]{1,70}$/),
    nastyString(20).map((text) => encodeURIComponent(text.replace(/[\uD800-\uDFFF]/g, 'x'))),
    fc.constantFrom(keys.appId.toUpperCase(), keys.clientId, '%zz', '%', '..', '.', 'x'.repeat(300), `${keys.appId}%00`, `${keys.appId};x`),
  );
}

const pathTail = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  fc.constantFrom('/', '?', '?x=1', '?disable_cache=1700000000000', '?grant_type=password', '//', '/x', '?%zz', '?a=%'),
  fc.string({ maxLength: 20 }).map((query) => `?q=${encodeURIComponent(query.replace(/[\uD800-\uDFFF]/g, 'x'))}`),
);

function path(keys: Keys): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 5, arbitrary: fc.tuple(appSegment(keys), pathTail).map(([app, tail]) => `/api/apps/${app}/oauth2/token${tail}`) },
    { weight: 3, arbitrary: pathTail.map((tail) => `/api/oauth2/token${tail}`) },
    fc
      .tuple(
        appSegment(keys),
        fc.array(fc.constantFrom('me', 'whoami', 'oauth2', 'token', '%6De', 'x', '', '..', 'revoke', 'introspect'), { maxLength: 4 }),
      )
      .map(([app, segments]) => `/api/apps/${app}/${segments.join('/')}`),
    fc.constantFrom('/api/apps/', '/api/apps', '/api/oauth2/token/', '/api//oauth2/token', '/API/oauth2/token'),
  );
}

function kiiAppIdHeader(keys: Keys): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant(keys.appId) },
    { weight: 2, arbitrary: fc.constant(undefined) },
    fc.constantFrom('', keys.appId.toUpperCase(), keys.clientId, ` ${keys.appId}`, `${keys.appId}, ${keys.appId}`, 'x'.repeat(300)),
    nastyString(20),
  );
}

const method = fc.oneof(
  { weight: 12, arbitrary: fc.constant('POST') },
  fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND', 'post'),
);

function generatedRequest(keys: Keys, now: number): fc.Arbitrary<GeneratedRequest> {
  return fc.oneof({ weight: 3, arbitrary: anyRequest(keys, now) }, { weight: 2, arbitrary: wellAddressedRequest(keys, now) });
}

/**
 * A POST to a token endpoint of the app with the right headers and a content type that matches the
 * body's encoding, and a body that is nearly valid: gets past the envelope to the checks of the fields.
 */
function wellAddressedRequest(keys: Keys, now: number): fc.Arbitrary<GeneratedRequest> {
  return fc
    .record({
      sdk: fc.boolean(),
      body: nearlyValidBody(keys, now),
      vendor: fc.boolean(),
      authorization: fc.oneof(fc.constant(basic(keys.appId)), authorization(keys)),
      tail: pathTail,
    })
    .map(({ sdk, body, vendor, authorization, tail }) => {
      const type = body.startsWith('{')
        ? vendor
          ? 'application/vnd.kii.OauthTokenRequest+json'
          : 'application/json'
        : 'application/x-www-form-urlencoded';
      const headers: [string, string][] = [
        ['content-type', type],
        ['authorization', authorization],
      ];
      if (sdk) headers.push(['x-kii-appid', keys.appId]);
      const path = sdk ? `/api/oauth2/token${tail}` : `/api/apps/${keys.appId}/oauth2/token${tail}`;
      return { method: 'POST', path, headers, body: new Uint8Array(Buffer.from(body, 'utf8')), raw: false };
    });
}

/** Every part random on its own. */
function anyRequest(keys: Keys, now: number): fc.Arbitrary<GeneratedRequest> {
  return fc
    .record({
      method,
      path: path(keys),
      contentType: fc.option(contentType, { nil: undefined, freq: 6 }),
      authorization: fc.option(authorization(keys), { nil: undefined, freq: 6 }),
      kiiAppId: kiiAppIdHeader(keys),
      kiiAppKey: fc.option(fc.constantFrom(keys.appKey, `${CANARY}-appkey`), { nil: undefined }),
      body: body(keys, now),
      raw: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
    })
    .map(({ method, path, contentType, authorization, kiiAppId, kiiAppKey, body, raw }) => {
      const headers: [string, string][] = [];
      if (contentType !== undefined) headers.push(['content-type', contentType]);
      if (authorization !== undefined) headers.push(['authorization', authorization]);
      if (kiiAppId !== undefined) headers.push(['x-kii-appid', kiiAppId]);
      if (kiiAppKey !== undefined) headers.push(['x-kii-appkey', kiiAppKey]);
      return { method, path, headers, body, raw };
    });
}

// ---- sending --------------------------------------------------------------------------------------

/** What fetch will put on the wire unchanged: visible ASCII and latin-1, no CR/LF/NUL, no edge whitespace. */
const FETCHABLE_HEADER_VALUE = /^(?:[\x21-\x7e\x80-\xff](?:[\x20-\x7e\x80-\xff\t]*[\x21-\x7e\x80-\xff])?)?$/;
const FETCHABLE_PATH = /^\/[\x21-\x22\x24-\x5b\x5d-\x7e]*$/;
const FETCH_METHODS = new Set(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND']);

function fetchable(generated: GeneratedRequest): boolean {
  return (
    !generated.raw &&
    FETCH_METHODS.has(generated.method) &&
    FETCHABLE_PATH.test(generated.path) &&
    !generated.path.includes('..') &&
    !/\/\.(?:\/|$)/.test(generated.path) &&
    generated.headers.every(([, value]) => FETCHABLE_HEADER_VALUE.test(value))
  );
}

async function send(generated: GeneratedRequest): Promise<JsonResponse | RawResponse | null> {
  const hasBody = generated.body !== undefined && generated.method !== 'GET' && generated.method !== 'HEAD';
  if (fetchable(generated)) {
    const headers = new Headers();
    for (const [name, value] of generated.headers) headers.append(name, value);
    return request(`${server.baseUrl}${generated.path}`, {
      method: generated.method,
      headers,
      ...(hasBody ? { body: generated.body } : {}),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  }
  const lines = [`${generated.method} ${generated.path} HTTP/1.1`, `host: ${new URL(server.baseUrl).host}`, 'connection: close'];
  for (const [name, value] of generated.headers) lines.push(`${name}: ${value}`);
  if (hasBody) lines.push(`content-length: ${generated.body!.length}`);
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8');
  const bytes = hasBody ? Buffer.concat([head, generated.body!]) : head;
  return rawHttp(server.baseUrl, bytes, { timeoutMs: REQUEST_TIMEOUT_MS, head: generated.method === 'HEAD' });
}

// ---- properties -----------------------------------------------------------------------------------

/** Everything wrong with an answer to any request; empty when it keeps the contract. */
function contractProblems(generated: GeneratedRequest, response: JsonResponse | RawResponse | null): string[] {
  if (response === null) return ['the server closed the connection without answering'];
  const problems: string[] = [];
  if (response.status >= 500) problems.push(`a ${response.status}`);
  for (const secret of [server.app.clientSecret, CANARY]) {
    if (response.text.includes(secret) || headerText(response).includes(secret))
      problems.push(`the answer echoes ${secret === CANARY ? 'a sent secret' : 'the ClientSecret'}`);
  }
  if (response.status >= 200 && response.status < 300) {
    if (/\/oauth2\/token\b/.test(generated.path) && generated.method !== 'HEAD') problems.push(...tokenShapeProblems(response));
    return problems;
  }
  const code = (response.body as { errorCode?: unknown } | undefined)?.errorCode;
  if (generated.method === 'HEAD') {
    if (!(response.headers.get('content-type') ?? '').startsWith('application/json')) problems.push('HEAD error is not JSON');
    return problems;
  }
  if (typeof code !== 'string' || !Object.hasOwn(ERROR_STATUS, code))
    return [...problems, `not a contract error: ${response.status} ${response.text.slice(0, 300)}`];
  const expectedStatus = DOCUMENTED_STATUS_EXCEPTIONS[response.status]?.includes(code)
    ? response.status
    : ERROR_STATUS[code as keyof typeof ERROR_STATUS];
  problems.push(...errorProblems(response, expectedStatus, code));
  const challenge = CHALLENGES[code];
  if (challenge !== undefined && !challenge.test(response.headers.get('www-authenticate') ?? '')) {
    problems.push(`${code} without its WWW-Authenticate challenge`);
  }
  if (code === 'METHOD_NOT_ALLOWED' && response.headers.get('allow') === null) problems.push('405 without Allow');
  return problems;
}

function headerText(response: JsonResponse): string {
  return [...response.headers].map(([name, value]) => `${name}: ${value}`).join('\n');
}

function tokenShapeProblems(response: JsonResponse): string[] {
  const problems: string[] = [];
  const body = response.body as Record<string, unknown> | undefined;
  if (body === undefined || body === null || typeof body !== 'object') return [`token answer is not JSON: ${response.text}`];
  if (JSON.stringify(Object.keys(body).sort()) !== JSON.stringify(['access_token', 'expires_in', 'id', 'token_type']))
    problems.push(`token keys ${Object.keys(body).join(',')}`);
  if (body.token_type !== 'bearer') problems.push(`token_type ${String(body.token_type)}`);
  if (typeof body.access_token !== 'string' || !TOKEN_PATTERN.test(body.access_token))
    problems.push('access_token not URL-safe or too long');
  if (!Number.isInteger(body.expires_in) || (body.expires_in as number) < 0 || (body.expires_in as number) > NEVER_EXPIRES_IN)
    problems.push(`expires_in ${String(body.expires_in)}`);
  if (body.id !== 'ANONYMOUS' && body.id !== server.app.adminId) problems.push(`id ${String(body.id)}`);
  if (response.headers.get('cache-control') !== 'no-store') problems.push('no Cache-Control: no-store');
  if (response.headers.get('pragma') !== 'no-cache') problems.push('no Pragma: no-cache');
  return problems;
}

function describeRequest(generated: GeneratedRequest): string {
  const body = generated.body === undefined ? '(none)' : JSON.stringify(Buffer.from(generated.body).toString('latin1').slice(0, 400));
  return (
    `${generated.method} ${JSON.stringify(generated.path)} via ${fetchable(generated) ? 'fetch' : 'raw socket'}\n` +
    `headers ${JSON.stringify(generated.headers).slice(0, 600)}\nbody ${body}`
  );
}

/** The seed and the replay hint on failure: fast-check's own report carries the counterexample and path. */
async function check<T>(name: string, property: fc.IAsyncPropertyWithHooks<[T]>, numRuns: number): Promise<void> {
  const started = performance.now();
  try {
    // No shrinking by default: each step is a round trip; the failing request is printed whole anyway.
    await fc.assert(property, { seed: SEED, numRuns, endOnFailure: process.env.FC_SHRINK !== 'on' });
  } catch (error) {
    const cause = (error as Error).cause;
    const detail = cause instanceof Error ? `\n${cause.message}` : '';
    throw new Error(
      `${name} failed with seed ${SEED} (replay: FC_SEED=${SEED}; FC_SHRINK=on to shrink)${detail}\n${(error as Error).message}`,
      { cause: error },
    );
  } finally {
    console.log(`${name}: ${numRuns} runs, seed ${SEED}, ${Math.round(performance.now() - started)} ms`);
  }
}

/** What the generated requests got, printed so that a change of generators that stops reaching the server shows. */
const outcomes = {
  counts: new Map<string, number>(),
  count(generated: GeneratedRequest, response: JsonResponse | RawResponse | null) {
    const code = (response?.body as { errorCode?: unknown } | undefined)?.errorCode;
    const key = `${response?.status ?? 'closed'} ${typeof code === 'string' ? code : ''}`.trim() + (fetchable(generated) ? '' : ' (raw)');
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  },
  summary() {
    return `outcomes: ${[...this.counts]
      .sort((a, b) => b[1] - a[1])
      .map(([key, n]) => `${key} ×${n}`)
      .join(', ')}`;
  },
};

describe('token endpoints under generated requests', () => {
  it('answer anything with a 2xx or the contract error of the right status, never a 5xx or a secret', async () => {
    const now = Date.now();
    await check(
      'arbitrary requests',
      fc.asyncProperty(generatedRequest(server.app, now), async (generated) => {
        let response: JsonResponse | RawResponse | null;
        try {
          response = await send(generated);
        } catch (error) {
          assert.fail(`${describeRequest(generated)}\nsending failed (a hang?): ${(error as Error).message}`);
        }
        outcomes.count(generated, response);
        const problems = contractProblems(generated, response);
        assert.deepEqual(problems, [], `${describeRequest(generated)}\nanswer: ${response?.status} ${response?.text.slice(0, 400)}`);
      }),
      Number(process.env.FC_RUNS ?? 6000),
    );
    console.log(outcomes.summary());
  });

  it('answer a wrong ClientSecret exactly like an unknown ClientID, however the attempt is sent', async () => {
    const attempt = fc.record({
      wrongSecret: fc.oneof(
        fc.string({ minLength: 1, maxLength: 100 }),
        fc.constant(server.app.appKey),
        fc.constant(server.app.clientSecret.slice(0, -1)),
      ),
      unknownClientId: fc.oneof(fc.stringMatching(/^[0-9a-f]{32}$/), fc.string({ minLength: 1, maxLength: 100 })),
      way: fc.constantFrom('json', 'form', 'client_secret_basic', 'sdk'),
    });
    await check(
      'wrong secret vs unknown ClientID',
      fc.asyncProperty(attempt, async ({ wrongSecret, unknownClientId, way }) => {
        fc.pre(wrongSecret !== server.app.clientSecret && unknownClientId !== server.app.clientId && unknownClientId !== server.app.appId);
        const wrong = await send(adminAttempt(way, server.app.clientId, wrongSecret));
        const unknown = await send(adminAttempt(way, unknownClientId, server.app.clientSecret));
        const context = `${way}: wrong secret ${JSON.stringify(wrongSecret)}, unknown ClientID ${JSON.stringify(unknownClientId)}`;
        assert.ok(wrong !== null && unknown !== null, context);
        assert.deepEqual(errorProblems(wrong, 401, 'invalid_client'), [], `${context}\n${wrong.text}`);
        assert.equal(unknown.status, wrong.status, context);
        assert.equal(unknown.text, wrong.text, context);
        const headers = (response: JsonResponse) =>
          [...response.headers].filter(([name]) => !['date', 'content-length', 'connection', 'keep-alive', 'x-request-id'].includes(name));
        assert.deepEqual(headers(unknown), headers(wrong), context);
      }),
      Number(process.env.FC_VALID_RUNS ?? 1200) / 5,
    );
  });

  it('give a working token for any valid request, however it is spelled', async () => {
    await check('valid requests', fc.asyncProperty(validRequest(server.app), checkValidRequest), Number(process.env.FC_VALID_RUNS ?? 1200));
  });
});

/** An admin token request with these credentials, sent one of the ways the contract allows. */
function adminAttempt(way: string, clientId: string, clientSecret: string): GeneratedRequest {
  const fields = { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret };
  const appBasic: [string, string] = ['authorization', basic(server.app.appId)];
  let path = `/api/apps/${server.app.appId}/oauth2/token`;
  let headers: [string, string][] = [['content-type', 'application/json'], appBasic];
  let body = JSON.stringify(fields);
  if (way === 'form') {
    headers = [['content-type', 'application/x-www-form-urlencoded'], appBasic];
    body = new URLSearchParams(fields).toString();
  } else if (way === 'client_secret_basic') {
    headers = [
      ['content-type', 'application/x-www-form-urlencoded'],
      ['authorization', basic(encodeURIComponent(clientId), encodeURIComponent(clientSecret))],
    ];
    body = 'grant_type=client_credentials';
  } else if (way === 'sdk') {
    path = '/api/oauth2/token';
    headers = [
      ['content-type', 'application/json'],
      ['x-kii-appid', server.app.appId],
    ];
  }
  return { method: 'POST', path, headers, body: new Uint8Array(Buffer.from(body)), raw: false };
}

// ---- valid requests -------------------------------------------------------------------------------

interface ValidRequest {
  kind: 'admin' | 'anonymous';
  /** UNIX ms, or null for none; relative to the moment the request is sent. */
  expiresInMs: number | null;
  build: (expiresAt: number | null) => GeneratedRequest;
  label: string;
}

/** Percent-encodes some characters of a value, as a client_secret_basic client may (RFC 6749 §2.3.1). */
function partlyEncoded(value: string): fc.Arbitrary<string> {
  return fc
    .array(fc.boolean(), { minLength: value.length, maxLength: value.length })
    .map((flags) =>
      [...value].map((char, i) => (flags[i] ? `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}` : char)).join(''),
    );
}

/** Unknown fields: any name but the known ones and the prototype-poisoning keys the JSON parser refuses. */
const unknownField = fc.tuple(
  fc
    .string({ maxLength: 12 })
    .filter((name) => !['grant_type', 'client_id', 'client_secret', 'expiresAt', '__proto__', 'constructor'].includes(name)),
  fc.jsonValue({ maxDepth: 2 }),
);

function validRequest(keys: Keys): fc.Arbitrary<ValidRequest> {
  const expiresInMs = fc.oneof(
    fc.constant(null),
    fc.integer({ min: 5_000, max: 86_400_000 }),
    fc.bigInt({ min: 5_000n, max: 400n * 365n * 86_400_000n }).map(Number),
    fc.constant(-1), // "at the largest instant": MAX_INSTANT
  );
  return fc
    .record({
      kind: fc.constantFrom('admin' as const, 'anonymous' as const),
      endpoint: fc.constantFrom('app' as const, 'sdk' as const),
      encoding: fc.constantFrom('json', 'vendor', 'form'),
      contentTypeSpelling: fc.constantFrom('plain', 'charset', 'upper'),
      clientSecretBasic: fc.boolean(),
      sdkAuthorization: fc.constantFrom('none', 'basic'),
      schemeSpelling: fc.constantFrom('Basic ', 'basic ', 'BASIC ', 'Basic   '),
      basicPassword: fc.string({ unit: codePoint, maxLength: 20 }),
      // Any non-empty AppKey: its value is not checked unless the app asks (at most 256 UTF-16 units).
      anonymousSecret: fc.oneof(fc.constant(keys.appKey), fc.string({ unit: codePoint, minLength: 1, maxLength: 128 })),
      sendGrantType: fc.boolean(),
      bodyCredentialsToo: fc.boolean(),
      expiresInMs,
      expiresAtSpelling: fc.constantFrom('integer', 'exponent', 'point-zero'),
      unknown: fc.array(unknownField, { maxLength: 4 }),
      order: fc.array(fc.nat(), { minLength: 12, maxLength: 12 }),
      query: fc.constantFrom('', '?disable_cache=1700000000000', '?scope=x&state=%25'),
      kiiAppKeyHeader: fc.boolean(),
      encodedUser: partlyEncoded(keys.clientId),
      encodedPassword: partlyEncoded(keys.clientSecret),
    })
    .map((v): ValidRequest => {
      const admin = v.kind === 'admin';
      const secretBasic = admin && v.clientSecretBasic;
      const build = (expiresAt: number | null): GeneratedRequest => {
        const fields: [string, unknown][] = [];
        if (v.endpoint === 'app' || v.sendGrantType) fields.push(['grant_type', 'client_credentials']);
        if (!secretBasic || v.bodyCredentialsToo) {
          fields.push(['client_id', admin ? keys.clientId : keys.appId]);
          fields.push(['client_secret', admin ? keys.clientSecret : v.anonymousSecret]);
        }
        if (expiresAt !== null) fields.push(['expiresAt', expiresAt]);
        fields.push(...v.unknown);
        // Shuffle the fields by the generated keys.
        const ordered = fields
          .map((field, i) => ({ field, key: v.order[i % v.order.length]! + i / 100 }))
          .sort((a, b) => a.key - b.key)
          .map((x) => x.field);

        const headers: [string, string][] = [];
        const basicValue = (user: string, password: string) =>
          `${v.schemeSpelling}${Buffer.from(`${user}:${password}`).toString('base64')}`;
        if (secretBasic) headers.push(['authorization', basicValue(v.encodedUser, v.encodedPassword)]);
        else if (v.endpoint === 'app' || v.sdkAuthorization === 'basic')
          headers.push(['authorization', basicValue(keys.appId, v.basicPassword)]);
        if (v.endpoint === 'sdk' || v.kiiAppKeyHeader) headers.push(['x-kii-appid', keys.appId]);
        if (v.kiiAppKeyHeader) headers.push(['x-kii-appkey', keys.appKey]);

        let text: string;
        let type: string;
        if (v.encoding === 'form') {
          const form = new URLSearchParams();
          for (const [name, value] of ordered) form.append(name, typeof value === 'string' ? value : JSON.stringify(value));
          text = form.toString();
          type = 'application/x-www-form-urlencoded';
        } else {
          text = `{${ordered.map(([name, value]) => `${JSON.stringify(name)}:${name === 'expiresAt' ? spellInteger(value as number, v.expiresAtSpelling) : JSON.stringify(value)}`).join(',')}}`;
          type = v.encoding === 'vendor' ? 'application/vnd.kii.OauthTokenRequest+json' : 'application/json';
        }
        if (v.contentTypeSpelling === 'charset') type += '; charset=utf-8';
        if (v.contentTypeSpelling === 'upper') type = type.toUpperCase();
        headers.push(['content-type', type]);
        const path = v.endpoint === 'app' ? `/api/apps/${keys.appId}/oauth2/token${v.query}` : `/api/oauth2/token${v.query}`;
        return { method: 'POST', path, headers, body: new Uint8Array(Buffer.from(text, 'utf8')), raw: false };
      };
      const label = `${v.kind} on ${v.endpoint} as ${v.encoding}${secretBasic ? ' with client_secret_basic' : ''}`;
      return { kind: v.kind, expiresInMs: v.expiresInMs, build, label };
    });
}

function spellInteger(value: number, spelling: string): string {
  if (spelling === 'point-zero') return `${value}.0`;
  if (spelling === 'exponent') {
    const digits = String(value);
    return `${digits[0]}.${digits.slice(1) || '0'}e${digits.length - 1}`;
  }
  return String(value);
}

async function checkValidRequest(valid: ValidRequest): Promise<void> {
  const before = Date.now();
  const expiresAt = valid.expiresInMs === null ? null : valid.expiresInMs === -1 ? MAX_INSTANT : before + valid.expiresInMs;
  const generated = valid.build(expiresAt);
  const response = await send(generated);
  const after = Date.now();
  const context = `${valid.label}\n${describeRequest(generated)}\nanswer: ${response?.status} ${response?.text}`;
  assert.ok(response !== null, context);
  assert.equal(response.status, 200, context);
  assert.deepEqual(tokenShapeProblems(response), [], context);
  const expectedId = valid.kind === 'admin' ? server.app.adminId : 'ANONYMOUS';
  assert.equal(response.body.id, expectedId, context);
  if (expiresAt === null) {
    assert.equal(response.body.expires_in, NEVER_EXPIRES_IN, context);
  } else {
    const latest = Math.min(Math.floor((expiresAt - before) / 1000), NEVER_EXPIRES_IN);
    const earliest = Math.min(Math.floor((expiresAt - after) / 1000), NEVER_EXPIRES_IN);
    assert.ok(
      response.body.expires_in >= earliest && response.body.expires_in <= latest,
      `expires_in ${response.body.expires_in} not in [${earliest}, ${latest}]\n${context}`,
    );
  }
  const whoami = await request(`${server.appUrl}/whoami`, {
    headers: { authorization: bearer(response.body.access_token) },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  assert.equal(whoami.status, 200, `whoami: ${whoami.text}\n${context}`);
  assert.deepEqual(whoami.body, { appId: server.app.appId, principal: valid.kind, id: expectedId, auth: 'bearer', expiresAt }, context);
}
