import { gzipSync } from 'node:zlib';
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { errorProblems } from '../helpers/assert.js';
import { adminFields, anonymousFields, basic, bearer, request, requestAs, tokenUrl, type JsonResponse } from '../helpers/http.js';
import { rawHttp, rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { serverForSuite, type TestServer } from '../helpers/server.js';

/**
 * An attacker's and a confused newcomer's inputs, each through the real listening server. Every one must
 * get a 4xx in the contract's JSON error shape: never a 5xx, a hang, a crash, a stack trace or an echoed
 * secret; and the server must keep working and keep what it stored.
 */

const REQUEST_TIMEOUT_MS = 5_000;

interface Case {
  name: string;
  send: (server: TestServer) => Promise<JsonResponse | RawResponse | null>;
  status: number;
  code: string;
  /** The request was HEAD: status and headers only. */
  head?: boolean;
  /**
   * Any 4xx in the contract's shape is right (e.g. refusing the odd header, or ignoring it and answering
   * what the rest of the request deserves); with `status: 200`, processing it normally is right too.
   */
  anyContractError?: boolean;
  /** The server may close the connection without answering (only for bytes that are not HTTP). */
  mayClose?: boolean;
  /** Headers the answer must carry, e.g. `allow: POST` or a `www-authenticate` challenge. */
  headers?: Record<string, RegExp>;
  /** What the answer's message must say, where the status and code alone do not tell the cause. */
  message?: RegExp;
}

const server = serverForSuite();
/** Issued before the attack; must still work after it. */
let adminToken: string;
let anonymousToken: string;

const tokenPath = (s: TestServer) => `/api/apps/${s.app.appId}/oauth2/token`;
const whoamiPath = (s: TestServer) => `/api/apps/${s.app.appId}/whoami`;

/** POST to the token endpoint with the app's Basic header; `body` goes as-is. */
function post(s: TestServer, body: RequestInit['body'], contentType: string | undefined, headers: Record<string, string> = {}) {
  return request(tokenUrl(s), {
    method: 'POST',
    headers: { authorization: basic(s.app.appId), ...(contentType === undefined ? {} : { 'content-type': contentType }), ...headers },
    ...(body === undefined ? {} : { body }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
}
const postJson = (s: TestServer, text: string) => post(s, text, 'application/json');
const postFields = (s: TestServer, fields: Record<string, unknown>) => postJson(s, JSON.stringify(fields));
const postForm = (s: TestServer, text: string, headers: Record<string, string> = {}) =>
  post(s, text, 'application/x-www-form-urlencoded', headers);
const whoami = (s: TestServer, authorization: string) =>
  request(`${s.appUrl}/whoami`, { headers: { authorization }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
/** Raw POST to the token endpoint (fetch would normalise or refuse what is sent). */
const rawPost = (s: TestServer, path: string, body: string | Buffer, headers: Record<string, string | Buffer> = {}) =>
  rawRequest(
    s.baseUrl,
    { method: 'POST', path, headers: { 'content-type': 'application/json', ...headers }, body },
    { timeoutMs: REQUEST_TIMEOUT_MS },
  );
const rawGet = (s: TestServer, path: string, headers: Record<string, string | Buffer> = {}) =>
  rawRequest(s.baseUrl, { method: 'GET', path, headers }, { timeoutMs: REQUEST_TIMEOUT_MS });

/** What `curl -d BODY` sends (optionally with `-u`, `-H`): a form, unless told otherwise with `-H 'Content-Type: …'`. */
const curlData = (s: TestServer, path: string, body: string, headers: Record<string, string> = {}) =>
  rawHttp(
    s.baseUrl,
    `POST ${path} HTTP/1.1\r\nHost: ${new URL(s.baseUrl).host}\r\n` +
      Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('') +
      `User-Agent: curl/8.5.0\r\nAccept: */*\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Content-Type: application/x-www-form-urlencoded\r\n\r\n${body}`,
    { timeoutMs: REQUEST_TIMEOUT_MS },
  );
/** A JSON request to a path of the app, with the admin token. */
const adminJson = (s: TestServer, method: string, path: string, body: string, contentType = 'application/json') =>
  request(`${s.appUrl}${path}`, {
    method,
    headers: { authorization: bearer(adminToken), 'content-type': contentType },
    body,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });

const anonymousBody = (s: TestServer) => JSON.stringify(anonymousFields(s));
/** 300 characters that a terminal or a log viewer would obey: escape sequences, a newline, a bidi override, and '%'. */
const HOSTILE_VALUE = 'x\u001b[2J\u001b]0;owned\u0007\n\u202e%'.repeat(20).slice(0, 300);
const PROTO_REFUSED = /must not contain a "__proto__" key/;
const CONSTRUCTOR_REFUSED = /must not contain a "constructor" key holding a "prototype"/;
const SENT_AS_FORM = /looks like JSON but was sent as a form.*Content-Type: application\/json/;
const INVALID_CLIENT = { 'www-authenticate': /^Basic\b/ };
const ALLOW_POST = { allow: /^POST$/ };

function nested(depth: number, open: string, close: string, inner = ''): string {
  return open.repeat(depth) + inner + close.repeat(depth);
}

async function* chunks(count: number, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < count; i++) yield new Uint8Array(size).fill(0x78);
}

const cases: Case[] = [
  // --- Content types -------------------------------------------------------------------------------
  {
    name: 'a body without Content-Type',
    send: (s) => post(s, new TextEncoder().encode(anonymousBody(s)), undefined),
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  { name: 'text/plain', send: (s) => post(s, anonymousBody(s), 'text/plain'), status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' },
  {
    name: 'a gzip-encoded JSON body',
    send: (s) => post(s, gzipSync(anonymousBody(s)), 'application/json', { 'content-encoding': 'gzip' }),
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: 'a plain JSON body labelled as gzip',
    send: (s) => post(s, anonymousBody(s), 'application/json', { 'content-encoding': 'gzip' }),
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: 'application/xml',
    send: (s) => post(s, '<token><grant_type>client_credentials</grant_type></token>', 'application/xml'),
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: 'multipart/form-data',
    send: (s) =>
      post(
        s,
        '--xx\r\nContent-Disposition: form-data; name="grant_type"\r\n\r\nclient_credentials\r\n--xx--\r\n',
        'multipart/form-data; boundary=xx',
      ),
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  { name: 'Content-Type ";;;"', send: (s) => post(s, anonymousBody(s), ';;;'), status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' },
  {
    name: 'Content-Type "application/"',
    send: (s) => post(s, anonymousBody(s), 'application/'),
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: 'Content-Type application/jsonp',
    send: (s) => post(s, anonymousBody(s), 'application/jsonp'),
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: 'an empty Content-Type header',
    send: (s) => rawPost(s, tokenPath(s), anonymousBody(s), { authorization: basic(s.app.appId), 'content-type': '' }),
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: 'text/plain on an authenticated path',
    send: (s) =>
      request(s.appUrl, { method: 'POST', headers: { authorization: basic(s.app.appId), 'content-type': 'text/plain' }, body: 'hello' }),
    status: 415,
    code: 'UNSUPPORTED_MEDIA_TYPE',
  },

  // --- Broken JSON -----------------------------------------------------------------------------------
  { name: 'truncated JSON', send: (s) => postJson(s, anonymousBody(s).slice(0, 30)), status: 400, code: 'invalid_request' },
  { name: 'JSON with trailing garbage', send: (s) => postJson(s, `${anonymousBody(s)} trailing`), status: 400, code: 'invalid_request' },
  { name: 'two JSON objects', send: (s) => postJson(s, `${anonymousBody(s)}${anonymousBody(s)}`), status: 400, code: 'invalid_request' },
  { name: 'a BOM before an empty object', send: (s) => postJson(s, '\uFEFF{}'), status: 400, code: 'invalid_request' },
  { name: 'NaN', send: (s) => postJson(s, anonymousBody(s).replace(/}$/, ',"expiresAt":NaN}')), status: 400, code: 'invalid_request' },
  {
    name: 'Infinity',
    send: (s) => postJson(s, anonymousBody(s).replace(/}$/, ',"expiresAt":Infinity}')),
    status: 400,
    code: 'invalid_request',
  },
  { name: 'a /* comment */', send: (s) => postJson(s, anonymousBody(s).replace(/^{/, '{/* hi */')), status: 400, code: 'invalid_request' },
  { name: 'a // comment', send: (s) => postJson(s, `// token\n${anonymousBody(s)}`), status: 400, code: 'invalid_request' },
  { name: 'single quotes', send: (s) => postJson(s, anonymousBody(s).replaceAll('"', "'")), status: 400, code: 'invalid_request' },
  { name: 'an empty JSON body', send: (s) => postJson(s, ''), status: 400, code: 'invalid_request' },
  { name: 'JSON without a body at all', send: (s) => post(s, undefined, 'application/json'), status: 400, code: 'invalid_request' },
  { name: 'JSON null', send: (s) => postJson(s, 'null'), status: 400, code: 'invalid_request' },
  { name: 'a JSON string', send: (s) => postJson(s, '"client_credentials"'), status: 400, code: 'invalid_request' },
  { name: 'a JSON number', send: (s) => postJson(s, '42'), status: 400, code: 'invalid_request' },
  { name: 'a JSON array of the right object', send: (s) => postJson(s, `[${anonymousBody(s)}]`), status: 400, code: 'invalid_request' },
  {
    name: 'broken JSON under the SDK media type',
    send: (s) => post(s, '{"client_id":', 'application/vnd.kii.OauthTokenRequest+json'),
    status: 400,
    code: 'invalid_request',
  },

  // --- Sizes -----------------------------------------------------------------------------------------
  {
    name: 'a 5 KB body',
    send: (s) => postFields(s, anonymousFields(s, { padding: 'x'.repeat(5 * 1024) })),
    status: 413,
    code: 'REQUEST_TOO_LARGE',
  },
  {
    name: 'a 1 MB body',
    send: (s) => postFields(s, anonymousFields(s, { padding: 'x'.repeat(1024 * 1024) })),
    status: 413,
    code: 'REQUEST_TOO_LARGE',
  },
  {
    name: 'a 1 MB chunked body without Content-Length',
    send: (s) =>
      request(tokenUrl(s), {
        method: 'POST',
        headers: { authorization: basic(s.app.appId), 'content-type': 'application/json' },
        body: chunks(256, 4096),
        duplex: 'half',
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      }),
    status: 413,
    code: 'REQUEST_TOO_LARGE',
  },
  {
    name: 'a 1 MB form body',
    send: (s) => postForm(s, `grant_type=client_credentials&x=${'y'.repeat(1024 * 1024)}`),
    status: 413,
    code: 'REQUEST_TOO_LARGE',
  },
  {
    name: 'Content-Length claiming 100000 bytes for a tiny body',
    send: (s) => rawPost(s, tokenPath(s), anonymousBody(s), { authorization: basic(s.app.appId), 'content-length': '100000' }),
    status: 413,
    code: 'REQUEST_TOO_LARGE',
  },
  {
    name: 'Content-Length claiming 1000 bytes, 2 sent, then the client stops sending',
    send: (s) =>
      rawRequest(
        s.baseUrl,
        {
          method: 'POST',
          path: tokenPath(s),
          headers: { authorization: basic(s.app.appId), 'content-type': 'application/json', 'content-length': '1000' },
          body: '{}',
        },
        { endAfterWrite: true, timeoutMs: REQUEST_TIMEOUT_MS },
      ),
    status: 400,
    code: 'invalid_request',
    mayClose: true,
  },
  {
    name: 'Content-Length shorter than the body (the rest is garbage HTTP)',
    send: (s) => rawPost(s, tokenPath(s), anonymousBody(s), { authorization: basic(s.app.appId), 'content-length': '3' }),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a negative Content-Length',
    send: (s) => rawPost(s, tokenPath(s), anonymousBody(s), { authorization: basic(s.app.appId), 'content-length': '-5' }),
    status: 400,
    code: 'invalid_request',
  },

  // --- Deep nesting within 4 KB ------------------------------------------------------------------------
  { name: 'arrays nested 2000 deep', send: (s) => postJson(s, nested(2000, '[', ']')), status: 400, code: 'invalid_request' },
  { name: 'objects nested 680 deep', send: (s) => postJson(s, nested(680, '{"a":', '}', '1')), status: 400, code: 'invalid_request' },
  {
    name: 'valid credentials plus an object nested 600 deep',
    send: (s) => postJson(s, anonymousBody(s).replace(/}$/, `,"x":${nested(600, '{"a":', '}', '1')}}`)),
    status: 200,
    code: '',
  },

  {
    name: 'fields named like Object.prototype methods',
    send: (s) => postJson(s, anonymousBody(s).replace(/}$/, ',"hasOwnProperty":1,"toString":"x","valueOf":[],"__defineGetter__":{}}')),
    status: 200,
    code: '',
  },

  // --- Prototype poisoning ------------------------------------------------------------------------------
  {
    name: '{"__proto__": {...}}',
    send: (s) => postJson(s, anonymousBody(s).replace(/}$/, ',"__proto__":{"polluted":"yes"}}')),
    status: 400,
    code: 'invalid_request',
    message: PROTO_REFUSED,
  },
  {
    name: '{"constructor": {"prototype": {...}}}',
    send: (s) => postJson(s, anonymousBody(s).replace(/}$/, ',"constructor":{"prototype":{"polluted":"yes"}}}')),
    status: 400,
    code: 'invalid_request',
    message: CONSTRUCTOR_REFUSED,
  },
  {
    name: 'nested "__proto__"',
    send: (s) => postJson(s, anonymousBody(s).replace(/}$/, ',"x":{"y":{"__proto__":{"polluted":"yes"}}}}')),
    status: 400,
    code: 'invalid_request',
    message: PROTO_REFUSED,
  },
  {
    name: '"__proto__" in an array',
    send: (s) => postJson(s, anonymousBody(s).replace(/}$/, ',"x":[1,{"__proto__":{"polluted":"yes"}}]}')),
    status: 400,
    code: 'invalid_request',
    message: PROTO_REFUSED,
  },
  {
    name: '"__proto__" under the SDK media type',
    send: (s) => post(s, '{"__proto__":{"polluted":"yes"}}', 'application/vnd.kii.OauthTokenRequest+json'),
    status: 400,
    code: 'invalid_request',
    message: PROTO_REFUSED,
  },
  {
    name: '"__proto__" on the SDK token path',
    send: (s) =>
      request(`${s.baseUrl}/api/oauth2/token`, {
        method: 'POST',
        headers: { 'x-kii-appid': s.app.appId, 'content-type': 'application/json' },
        body: '{"__proto__":{"polluted":"yes"}}',
      }),
    status: 400,
    code: 'invalid_request',
    message: PROTO_REFUSED,
  },
  {
    name: '"__proto__" in a configuration change',
    send: (s) => adminJson(s, 'PATCH', '/configuration', '{"__proto__":{"requireAppKey":true}}'),
    status: 400,
    code: 'invalid_request',
    message: PROTO_REFUSED,
  },
  {
    name: '"__proto__" in a merge patch',
    send: (s) => adminJson(s, 'PATCH', '/configuration', '{"requireAppKey":true,"__proto__":{}}', 'application/merge-patch+json'),
    status: 400,
    code: 'invalid_request',
    message: PROTO_REFUSED,
  },
  {
    name: '"constructor"."prototype" in a configuration change',
    send: (s) => adminJson(s, 'PATCH', '/configuration', '{"constructor":{"prototype":{"requireAppKey":true}}}'),
    status: 400,
    code: 'invalid_request',
    message: CONSTRUCTOR_REFUSED,
  },
  {
    name: '"__proto__" in a revocation',
    send: (s) => adminJson(s, 'POST', '/oauth2/revoke', `{"token":"${anonymousToken}","__proto__":{}}`),
    status: 400,
    code: 'invalid_request',
    message: PROTO_REFUSED,
  },
  {
    name: '"__proto__" in an introspection',
    send: (s) => adminJson(s, 'POST', '/oauth2/introspect', `{"token":"${anonymousToken}","__proto__":{}}`),
    status: 400,
    code: 'invalid_request',
    message: PROTO_REFUSED,
  },
  {
    name: '"__proto__" after a BOM',
    send: (s) => postJson(s, '\uFEFF{"__proto__":{}}'),
    status: 400,
    code: 'invalid_request',
    message: PROTO_REFUSED,
  },
  {
    name: 'a "__proto__" key in broken JSON is broken JSON',
    send: (s) => postJson(s, '{"__proto__":{}'),
    status: 400,
    code: 'invalid_request',
    message: /not valid JSON/,
  },
  {
    name: '"__proto__" as a form field, with no grant_type',
    send: (s) => postForm(s, '__proto__[polluted]=yes&constructor[prototype][polluted]=yes'),
    status: 400,
    code: 'invalid_request',
  },

  // --- The path ------------------------------------------------------------------------------------------
  {
    name: 'an AppID of 300 characters (token)',
    send: (s) => rawPost(s, `/api/apps/${'a'.repeat(300)}/oauth2/token`, anonymousBody(s), { authorization: basic('a'.repeat(300)) }),
    status: 404,
    code: 'APP_NOT_FOUND',
  },
  {
    name: 'an AppID of 300 characters (whoami)',
    send: (s) => rawGet(s, `/api/apps/${'a'.repeat(300)}/whoami`, { authorization: basic('a'.repeat(300)) }),
    status: 404,
    code: 'APP_NOT_FOUND',
  },
  {
    name: 'an AppID of 65 characters',
    send: (s) => rawPost(s, `/api/apps/${'a'.repeat(65)}/oauth2/token`, anonymousBody(s), { authorization: basic('a'.repeat(65)) }),
    status: 404,
    code: 'APP_NOT_FOUND',
  },
  {
    name: 'a unicode AppID, percent-encoded',
    send: (s) =>
      request(`${s.baseUrl}/api/apps/${encodeURIComponent('アプリ☃')}/oauth2/token`, {
        method: 'POST',
        headers: { authorization: basic('アプリ☃'), 'content-type': 'application/json' },
        body: anonymousBody(s),
      }),
    status: 404,
    code: 'APP_NOT_FOUND',
  },
  {
    name: 'a unicode AppID as raw UTF-8 bytes',
    send: (s) => rawPost(s, '/api/apps/アプリ/oauth2/token', anonymousBody(s)),
    status: 400,
    code: 'invalid_request',
  },
  { name: 'an AppID of %00', send: (s) => rawPost(s, '/api/apps/%00/oauth2/token', anonymousBody(s)), status: 404, code: 'APP_NOT_FOUND' },
  {
    name: 'an AppID followed by %00',
    send: (s) => rawPost(s, `/api/apps/${s.app.appId}%00/oauth2/token`, anonymousBody(s), { authorization: basic(s.app.appId) }),
    status: 404,
    code: 'APP_NOT_FOUND',
  },
  {
    name: 'an AppID with an encoded slash',
    send: (s) => rawPost(s, `/api/apps/${s.app.appId}%2Foauth2%2Ftoken`, anonymousBody(s), { authorization: basic(s.app.appId) }),
    status: 404,
    code: 'APP_NOT_FOUND',
  },
  { name: 'an AppID of ..', send: (s) => rawPost(s, '/api/apps/../oauth2/token', anonymousBody(s)), status: 404, code: 'APP_NOT_FOUND' },
  {
    name: 'an AppID of %2e%2e',
    send: (s) => rawPost(s, '/api/apps/%2e%2e/oauth2/token', anonymousBody(s)),
    status: 404,
    code: 'APP_NOT_FOUND',
  },
  {
    name: 'a path climbing out with ../../',
    send: (s) => rawGet(s, `/api/apps/${s.app.appId}/../../../etc/passwd`, { authorization: basic(s.app.appId) }),
    status: 404,
    code: 'NOT_FOUND',
  },
  {
    name: 'an invalid escape %zz in the AppID',
    send: (s) => rawPost(s, '/api/apps/%zz/oauth2/token', anonymousBody(s)),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a lone % in the AppID',
    send: (s) => rawPost(s, '/api/apps/%/oauth2/token', anonymousBody(s)),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a broken UTF-8 escape on whoami',
    send: (s) => rawGet(s, '/api/apps/%E0%A4%A/whoami', { authorization: basic(s.app.appId) }),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'an SDK X-Kii-AppID of 300 characters',
    send: (s) => rawPost(s, '/api/oauth2/token', '{}', { 'x-kii-appid': 'a'.repeat(300) }),
    status: 404,
    code: 'APP_NOT_FOUND',
  },
  {
    name: 'an SDK X-Kii-AppID of raw UTF-8',
    send: (s) => rawPost(s, '/api/oauth2/token', '{}', { 'x-kii-appid': 'アプリ' }),
    status: 404,
    code: 'APP_NOT_FOUND',
  },
  {
    name: 'an empty SDK X-Kii-AppID',
    send: (s) => rawPost(s, '/api/oauth2/token', '{}', { 'x-kii-appid': '' }),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'whoami with ?access_token= in the query and no header',
    send: (s) => request(`${s.appUrl}/whoami?access_token=${adminToken}`),
    status: 401,
    code: 'UNAUTHORIZED',
  },

  // --- Headers -----------------------------------------------------------------------------------------
  {
    name: 'a 10 KB Basic header (token)',
    send: (s) => post(s, anonymousBody(s), 'application/json', { authorization: basic(s.app.appId, 'p'.repeat(10 * 1024)) }),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'a 10 KB Basic header (whoami)',
    send: (s) => whoami(s, basic(s.app.appId, 'p'.repeat(10 * 1024))),
    status: 401,
    code: 'UNAUTHORIZED',
  },
  {
    name: 'Basic with non-base64 (token)',
    send: (s) => post(s, anonymousBody(s), 'application/json', { authorization: 'Basic !!not*base64!!' }),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  { name: 'Basic with non-base64 (whoami)', send: (s) => whoami(s, 'Basic !!not*base64!!'), status: 401, code: 'UNAUTHORIZED' },
  {
    name: 'Basic with binary bytes (token), credentials in the body too',
    send: (s) =>
      post(s, anonymousBody(s), 'application/json', {
        authorization: `Basic ${Buffer.from([0xff, 0x00, 0x3a, 0xfe, 0x80, 0x3a, 0x00]).toString('base64')}`,
      }),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'Basic with binary bytes (token)',
    send: (s) =>
      postForm(s, 'grant_type=client_credentials', {
        authorization: `Basic ${Buffer.from([0xff, 0x00, 0x3a, 0xfe, 0x80, 0x3a, 0x00]).toString('base64')}`,
      }),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'Basic with binary bytes (whoami)',
    send: (s) => whoami(s, `Basic ${Buffer.from([0xff, 0x00, 0x3a, 0xfe]).toString('base64')}`),
    status: 401,
    code: 'UNAUTHORIZED',
  },
  {
    name: 'Basic with nothing after it',
    send: (s) => post(s, anonymousBody(s), 'application/json', { authorization: 'Basic' }),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'Basic of an empty user, credentials in the body too',
    send: (s) => post(s, anonymousBody(s), 'application/json', { authorization: basic('') }),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'Basic of an empty user',
    send: (s) => postForm(s, 'grant_type=client_credentials', { authorization: basic('') }),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'client_secret_basic with invalid %zz escapes',
    send: (s) => postForm(s, 'grant_type=client_credentials', { authorization: basic('%zz', '%zz%') }),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'a 1 KB Bearer on the token endpoint',
    send: (s) => post(s, anonymousBody(s), 'application/json', { authorization: bearer('t'.repeat(1024)) }),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'a 1 KB Bearer on whoami',
    send: (s) => whoami(s, bearer('t'.repeat(1024))),
    status: 401,
    code: 'INVALID_TOKEN',
    headers: { 'www-authenticate': /^Bearer error="invalid_token"/ },
  },
  {
    name: 'a raw unicode Bearer on whoami',
    send: (s) => rawGet(s, whoamiPath(s), { authorization: 'Bearer ünïcødé☃トークン' }),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'a Bearer of the right length with unicode in it',
    send: (s) => rawGet(s, whoamiPath(s), { authorization: `Bearer ${adminToken.slice(0, 40)}☃` }),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'a Bearer with a NUL byte',
    send: (s) => rawGet(s, whoamiPath(s), { authorization: `Bearer ${adminToken.slice(0, 20)}\u0000${adminToken.slice(21)}` }),
    status: 400,
    code: 'invalid_request',
  },
  { name: 'a well-formed token that was never issued', send: (s) => whoami(s, bearer('A'.repeat(43))), status: 401, code: 'INVALID_TOKEN' },
  {
    name: 'an Expect header Node does not know',
    send: (s) => rawPost(s, tokenPath(s), anonymousBody(s), { authorization: basic(s.app.appId), expect: 'the-unexpected' }),
    status: 200,
    code: '',
    anyContractError: true,
  },
  {
    name: 'an empty Bearer (a malformed token)',
    send: (s) => rawGet(s, whoamiPath(s), { authorization: 'Bearer ' }),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  {
    name: 'a Bearer of spaces',
    send: (s) => rawGet(s, whoamiPath(s), { authorization: 'Bearer      x   ' }),
    status: 401,
    code: 'INVALID_TOKEN',
  },
  { name: 'an unknown scheme', send: (s) => whoami(s, `Digest ${adminToken}`), status: 401, code: 'UNAUTHORIZED' },

  // --- Fields ----------------------------------------------------------------------------------------
  {
    name: 'a client_id of 3.5 KB (within the body limit)',
    send: (s) => postFields(s, anonymousFields(s, { client_id: 'c'.repeat(3500) })),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a client_secret of 3.5 KB',
    send: (s) => postFields(s, adminFields(s, { client_secret: 's'.repeat(3500) })),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a client_id of 10 KB (beyond the body limit)',
    send: (s) => postFields(s, anonymousFields(s, { client_id: 'c'.repeat(10 * 1024) })),
    status: 413,
    code: 'REQUEST_TOO_LARGE',
  },
  {
    name: 'a unicode client_id',
    send: (s) => postFields(s, adminFields(s, { client_id: 'クライアント☃🔑' })),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'a unicode client_secret',
    send: (s) => postFields(s, adminFields(s, { client_secret: 'シークレット☃🔑' })),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'a lone surrogate in client_id',
    send: (s) => postJson(s, anonymousBody(s).replace(`"${s.app.appId}"`, '"\\ud800"')),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'a NUL in client_id',
    send: (s) => postFields(s, adminFields(s, { client_id: `${s.app.clientId}\u0000` })),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'a NUL in client_secret',
    send: (s) => postFields(s, adminFields(s, { client_secret: `${s.app.clientSecret}\u0000` })),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'a NUL in the AppID as client_id',
    send: (s) => postFields(s, anonymousFields(s, { client_id: `\u0000${s.app.appId}` })),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'SQL in client_id',
    send: (s) => postFields(s, adminFields(s, { client_id: "' OR '1'='1' --" })),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'SQL in client_secret',
    send: (s) => postFields(s, adminFields(s, { client_secret: "x' OR 1=1; DROP TABLE apps; --" })),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'SQL in the AppID',
    send: (s) =>
      request(`${s.baseUrl}/api/apps/${encodeURIComponent("x' OR '1'='1")}/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: anonymousBody(s),
      }),
    status: 404,
    code: 'APP_NOT_FOUND',
  },
  {
    name: 'an unknown event type of 300 hostile characters',
    send: (s) => requestAs(`${s.appUrl}/events?type=${encodeURIComponent(HOSTILE_VALUE)}`, bearer(adminToken)),
    status: 400,
    code: 'invalid_request',
    message: /^Unknown event type "x\\u001b\[2J/,
  },
  {
    name: 'an unknown counts period of 300 hostile characters',
    send: (s) => requestAs(`${s.appUrl}/events/counts?per=${encodeURIComponent(HOSTILE_VALUE)}`, bearer(adminToken)),
    status: 400,
    code: 'invalid_request',
    message: /^Unknown period "x\\u001b\[2J/,
  },
  {
    name: 'a counts since of 300 hostile characters',
    send: (s) => requestAs(`${s.appUrl}/events/counts?since=${encodeURIComponent(HOSTILE_VALUE)}`, bearer(adminToken)),
    status: 400,
    code: 'invalid_request',
    message: /^since must be a date-time/,
  },
  {
    name: 'an unknown configuration field of 300 hostile characters',
    send: (s) => adminJson(s, 'PATCH', '/configuration', JSON.stringify({ [HOSTILE_VALUE]: 1 })),
    status: 400,
    code: 'invalid_request',
    message: /^Unknown configuration field "x\\u001b\[2J/,
  },
  {
    name: 'grant_type in capitals',
    send: (s) => postFields(s, anonymousFields(s, { grant_type: 'CLIENT_CREDENTIALS' })),
    status: 400,
    code: 'unsupported_grant_type',
  },
  {
    name: 'grant_type password',
    send: (s) => postFields(s, anonymousFields(s, { grant_type: 'password' })),
    status: 400,
    code: 'unsupported_grant_type',
  },
  ...(
    [
      ['expiresAt 1e300', 1e300],
      ['expiresAt -1', -1],
      ['expiresAt 1.5', 1.5],
      ['expiresAt -0', '-0'],
      ['expiresAt 9007199254740993', '9007199254740993'],
      ['expiresAt 2^63', '9223372036854775808'],
      ['expiresAt beyond any date (8.64e15 + 1)', 8_640_000_000_000_001],
      ['expiresAt 0', 0],
      ['expiresAt "123" as a string', '"123"'],
      ['expiresAt as a boolean', true],
      ['expiresAt as an array', [Date.now() + 60_000]],
      ['expiresAt as an object', { ms: Date.now() + 60_000 }],
    ] as [string, unknown][]
  ).map(([name, value]): Case => ({
    name,
    // A string value is spliced in verbatim, so that -0 and 9007199254740993 reach the parser as written.
    send: (s) => postJson(s, anonymousBody(s).replace(/}$/, `,"expiresAt":${typeof value === 'string' ? value : JSON.stringify(value)}}`)),
    status: 400,
    code: 'invalid_request',
  })),
  ...(['grant_type', 'client_id', 'client_secret'] as const).flatMap((field) =>
    (
      [
        ['a number', 123],
        ['a boolean', true],
        ['an array', ['client_credentials']],
        ['an object', { value: 'client_credentials' }],
      ] as [string, unknown][]
    ).map(([kind, value]): Case => ({
      name: `${field} as ${kind}`,
      send: (s) => postFields(s, adminFields(s, { [field]: value })),
      status: 400,
      code: 'invalid_request',
    })),
  ),

  // --- Form bodies -----------------------------------------------------------------------------------
  {
    name: 'a form with grant_type twice',
    send: (s) =>
      postForm(s, `grant_type=client_credentials&grant_type=client_credentials&client_id=${s.app.appId}&client_secret=${s.app.appKey}`),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a form with client_id twice',
    send: (s) =>
      postForm(s, `grant_type=client_credentials&client_id=${s.app.appId}&client_id=${s.app.clientId}&client_secret=${s.app.appKey}`),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a form with client_secret twice',
    send: (s) =>
      postForm(s, `grant_type=client_credentials&client_id=${s.app.clientId}&client_secret=x&client_secret=${s.app.clientSecret}`),
    status: 400,
    code: 'invalid_request',
  },
  { name: 'an empty form', send: (s) => postForm(s, ''), status: 400, code: 'invalid_request' },
  { name: 'a form of just "%zz"', send: (s) => postForm(s, '%zz'), status: 400, code: 'invalid_request' },
  {
    name: 'a form with grant_type=%zz',
    send: (s) => postForm(s, `grant_type=%zz&client_id=${s.app.appId}&client_secret=${s.app.appKey}`),
    status: 400,
    code: 'unsupported_grant_type',
  },
  {
    name: 'a form with client_id=%zz%',
    send: (s) => postForm(s, `grant_type=client_credentials&client_id=%zz%&client_secret=x`),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'a form with expiresAt=%zz',
    send: (s) => postForm(s, `grant_type=client_credentials&client_id=${s.app.appId}&client_secret=${s.app.appKey}&expiresAt=%zz`),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a form with expiresAt=1e300',
    send: (s) => postForm(s, `grant_type=client_credentials&client_id=${s.app.appId}&client_secret=${s.app.appKey}&expiresAt=1e300`),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a form with expiresAt=-1',
    send: (s) => postForm(s, `grant_type=client_credentials&client_id=${s.app.appId}&client_secret=${s.app.appKey}&expiresAt=-1`),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a form with a 20-digit expiresAt',
    send: (s) =>
      postForm(s, `grant_type=client_credentials&client_id=${s.app.appId}&client_secret=${s.app.appKey}&expiresAt=99999999999999999999`),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'a form with NUL bytes in client_id',
    send: (s) => postForm(s, `grant_type=client_credentials&client_id=${s.app.clientId}%00&client_secret=${s.app.clientSecret}`),
    status: 401,
    code: 'invalid_client',
    headers: INVALID_CLIENT,
  },
  {
    name: 'curl -d with a JSON body and no Content-Type (a form)',
    send: (s) => curlData(s, tokenPath(s), anonymousBody(s), { Authorization: basic(s.app.appId) }),
    status: 400,
    code: 'invalid_request',
    message: SENT_AS_FORM,
  },
  {
    name: 'curl -d with a JSON array (a form)',
    send: (s) => curlData(s, tokenPath(s), `[${anonymousBody(s)}]`, { Authorization: basic(s.app.appId) }),
    status: 400,
    code: 'invalid_request',
    message: SENT_AS_FORM,
  },
  {
    name: 'curl -d with JSON after a newline and spaces (a form)',
    send: (s) => curlData(s, tokenPath(s), `\n  ${anonymousBody(s)}`, { Authorization: basic(s.app.appId) }),
    status: 400,
    code: 'invalid_request',
    message: SENT_AS_FORM,
  },
  {
    name: 'curl -d with JSON on the SDK token path (a form)',
    send: (s) =>
      curlData(s, '/api/oauth2/token', JSON.stringify({ client_id: s.app.appId, client_secret: s.app.appKey }), {
        'X-Kii-AppID': s.app.appId,
      }),
    status: 400,
    code: 'invalid_request',
    message: SENT_AS_FORM,
  },
  {
    name: 'curl -d with JSON to revoke (a form)',
    send: (s) =>
      curlData(s, `/api/apps/${s.app.appId}/oauth2/revoke`, `{"token":"${anonymousToken}"}`, { Authorization: bearer(adminToken) }),
    status: 400,
    code: 'invalid_request',
    message: SENT_AS_FORM,
  },
  {
    name: 'curl -d with JSON to introspect (a form)',
    send: (s) =>
      curlData(s, `/api/apps/${s.app.appId}/oauth2/introspect`, `{"token":"${anonymousToken}"}`, { Authorization: bearer(adminToken) }),
    status: 400,
    code: 'invalid_request',
    message: SENT_AS_FORM,
  },

  // --- Methods ----------------------------------------------------------------------------------------
  ...(['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const).flatMap((method): Case[] => [
    {
      name: `${method} on the token path`,
      send: (s) => request(tokenUrl(s), { method, headers: { authorization: basic(s.app.appId) } }),
      status: 405,
      code: 'METHOD_NOT_ALLOWED',
      headers: ALLOW_POST,
    },
    {
      name: `${method} on the SDK token path`,
      send: (s) => request(`${s.baseUrl}/api/oauth2/token`, { method, headers: { 'x-kii-appid': s.app.appId } }),
      status: 405,
      code: 'METHOD_NOT_ALLOWED',
      headers: ALLOW_POST,
    },
  ]),
  {
    name: 'HEAD on the token path',
    send: (s) => request(tokenUrl(s), { method: 'HEAD' }),
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
    head: true,
    headers: ALLOW_POST,
  },
  {
    name: 'HEAD on the SDK token path',
    send: (s) => request(`${s.baseUrl}/api/oauth2/token`, { method: 'HEAD' }),
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
    head: true,
    headers: ALLOW_POST,
  },
  {
    name: 'TRACE on the token path',
    send: (s) => rawRequest(s.baseUrl, { method: 'TRACE', path: tokenPath(s) }),
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
    headers: ALLOW_POST,
  },
  {
    name: 'PROPFIND on the token path (a method Node parses)',
    send: (s) => rawRequest(s.baseUrl, { method: 'PROPFIND', path: tokenPath(s) }),
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
    headers: ALLOW_POST,
  },
  {
    name: 'SEARCH on the token path (a method Node parses)',
    send: (s) => rawRequest(s.baseUrl, { method: 'SEARCH', path: tokenPath(s) }),
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
    headers: ALLOW_POST,
  },
  {
    name: 'POST on whoami',
    send: (s) => requestAs(`${s.appUrl}/whoami`, basic(s.app.appId), 'POST'),
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
    headers: { allow: /^GET, HEAD$/ },
  },
  {
    name: 'TRACE on whoami',
    send: (s) => rawRequest(s.baseUrl, { method: 'TRACE', path: whoamiPath(s), headers: { authorization: basic(s.app.appId) } }),
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
    headers: { allow: /^GET, HEAD$/ },
  },
  {
    name: 'an invented method FOO',
    send: (s) => rawRequest(s.baseUrl, { method: 'FOO', path: tokenPath(s) }),
    status: 400,
    code: 'invalid_request',
  },
  {
    name: 'DELETE on the app',
    send: (s) => requestAs(s.appUrl, bearer(adminToken), 'DELETE'),
    status: 405,
    code: 'METHOD_NOT_ALLOWED',
    headers: { allow: /^GET, HEAD$/ },
  },

  // --- Raw malformed HTTP -----------------------------------------------------------------------------------
  {
    name: 'a garbage request line',
    send: (s) => rawHttp(s.baseUrl, 'HELLO THERE\r\n\r\n'),
    status: 400,
    code: 'invalid_request',
    mayClose: true,
  },
  {
    name: 'binary garbage',
    send: (s) =>
      rawHttp(s.baseUrl, Buffer.from([0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03, 0x0d, 0x0a, 0x0d, 0x0a])),
    status: 400,
    code: 'invalid_request',
    mayClose: true,
  },
  {
    name: 'an HTTP/2 preface',
    send: (s) => rawHttp(s.baseUrl, 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
    status: 400,
    code: 'invalid_request',
    mayClose: true,
  },
  {
    name: 'HTTP/9.9',
    send: (s) => rawHttp(s.baseUrl, `GET ${whoamiPath(s)} HTTP/9.9\r\nHost: x\r\n\r\n`),
    status: 400,
    code: 'invalid_request',
    mayClose: true,
  },
  {
    name: 'a control character in a header name',
    send: (s) => rawHttp(s.baseUrl, `GET ${whoamiPath(s)} HTTP/1.1\r\nHost: x\r\nX-A\x01b: c\r\n\r\n`),
    status: 400,
    code: 'invalid_request',
    mayClose: true,
  },
  {
    name: 'a control character in a header value',
    send: (s) => rawHttp(s.baseUrl, `GET ${whoamiPath(s)} HTTP/1.1\r\nHost: x\r\nX-A: b\x7fc\x01\r\n\r\n`),
    status: 400,
    code: 'invalid_request',
    mayClose: true,
  },
  {
    name: 'a header without a colon',
    send: (s) => rawHttp(s.baseUrl, `GET ${whoamiPath(s)} HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n`),
    status: 400,
    code: 'invalid_request',
    mayClose: true,
  },
  {
    name: 'a NUL in the request line',
    send: (s) => rawHttp(s.baseUrl, 'GET /api\x00/apps HTTP/1.1\r\nHost: x\r\n\r\n'),
    status: 400,
    code: 'invalid_request',
    mayClose: true,
  },
  {
    name: 'bare LF line endings',
    send: (s) => rawHttp(s.baseUrl, `GET ${whoamiPath(s)} HTTP/1.1\nHost: x\n\n`),
    status: 400,
    code: 'invalid_request',
    mayClose: true,
  },
  {
    name: 'a 20 KB header',
    send: (s) => rawHttp(s.baseUrl, `GET ${whoamiPath(s)} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`),
    status: 431,
    code: 'REQUEST_TOO_LARGE',
    mayClose: true,
  },
  {
    name: 'a 20 KB URL',
    send: (s) => rawHttp(s.baseUrl, `GET ${whoamiPath(s)}?x=${'a'.repeat(20 * 1024)} HTTP/1.1\r\nHost: x\r\n\r\n`),
    status: 431,
    code: 'REQUEST_TOO_LARGE',
    mayClose: true,
  },
  {
    name: 'Transfer-Encoding and Content-Length together (smuggling)',
    send: (s) =>
      rawHttp(
        s.baseUrl,
        `POST ${tokenPath(s)} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
      ),
    status: 400,
    code: 'invalid_request',
    mayClose: true,
  },
  {
    name: 'a broken chunk size',
    send: (s) =>
      rawHttp(
        s.baseUrl,
        `POST ${tokenPath(s)} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
      ),
    status: 400,
    code: 'invalid_request',
    mayClose: true,
  },
  {
    name: 'HTTP/1.1 without a Host header',
    send: (s) => rawHttp(s.baseUrl, `GET ${whoamiPath(s)} HTTP/1.1\r\nConnection: close\r\n\r\n`),
    status: 400,
    code: 'invalid_request',
    anyContractError: true,
  },
];

/** What must never show in an answer: stack frames, source paths, module internals. */
const INTERNALS = [
  /\bat [\w$.<>]+ \(/,
  /\bat (?:file|node):/,
  /\n\s+at /,
  /node_modules/,
  /\/(?:work|home|usr|tmp)\//,
  /\.[cm]?[jt]s:\d+/,
  /FST_ERR/,
  /\bstatusCode\b/,
];

/** What a terminal or a log viewer showing an error text would obey rather than show. */
const CONTROL_CHARACTER = /[\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069]/u;
/** Bounded, whatever was sent: an echo is cut short; the longest message lists the event types. */
const MAX_MESSAGE_LENGTH = 500;

/** Whatever a request held, its error text is short and shows no control character. */
function checkMessage(message: unknown): void {
  if (typeof message !== 'string') return;
  assert.ok(message.length <= MAX_MESSAGE_LENGTH, `a message of ${message.length} characters: ${message.slice(0, 500)}`);
  assert.doesNotMatch(message, CONTROL_CHARACTER, `a control character in the message: ${JSON.stringify(message)}`);
}

function check(testCase: Case, response: JsonResponse | RawResponse | null): void {
  if (response === null) {
    assert.ok(testCase.mayClose, 'the server closed the connection without an answer');
    return;
  }
  assert.ok(response.status < 500, `a ${response.status}: ${response.text}`);
  if (testCase.anyContractError === true && !(testCase.status === 200 && response.status === 200)) {
    assert.ok(response.status >= 400 && response.status < 500, `${response.status} ${response.text}`);
    assert.deepEqual(
      errorProblems(response, response.status, String(response.body?.errorCode)),
      [],
      `answer: ${response.status} ${response.text}`,
    );
  } else if (testCase.status === 200) {
    assert.equal(response.status, 200, response.text);
    assert.equal(typeof response.body?.access_token, 'string');
  } else if (testCase.head === true) {
    assert.equal(response.status, testCase.status);
    assert.equal(response.text, '');
  } else {
    assert.deepEqual(errorProblems(response, testCase.status, testCase.code), [], `answer: ${response.status} ${response.text}`);
  }
  for (const [name, pattern] of Object.entries(testCase.headers ?? {})) {
    assert.match(response.headers.get(name) ?? '', pattern, `header ${name}`);
  }
  if (testCase.message !== undefined) assert.match(String(response.body?.message), testCase.message);
  checkMessage(response.body?.message);
  for (const pattern of INTERNALS) assert.doesNotMatch(response.text, pattern, `internals in the answer: ${response.text}`);
  for (const secret of [server.app.clientSecret, adminToken, anonymousToken]) {
    assert.ok(!response.text.includes(secret), 'the answer echoes a secret or a token');
  }
}

describe("bad input: every one gets the contract's 4xx JSON error", () => {
  before(async () => {
    const admin = await request(tokenUrl(server), {
      method: 'POST',
      headers: { authorization: basic(server.app.appId), 'content-type': 'application/json' },
      body: JSON.stringify(adminFields(server)),
    });
    const anonymous = await postFields(server, anonymousFields(server));
    assert.equal(admin.status, 200, admin.text);
    assert.equal(anonymous.status, 200, anonymous.text);
    adminToken = admin.body.access_token;
    anonymousToken = anonymous.body.access_token;
  });

  for (const testCase of cases) {
    const expected =
      testCase.anyContractError === true
        ? testCase.status === 200
          ? '200 or a contract 4xx'
          : 'a contract 4xx'
        : testCase.status === 200
          ? '200'
          : `${testCase.status} ${testCase.code}`;
    it(`${testCase.name} -> ${expected}`, { timeout: 10_000 }, async () => {
      check(testCase, await testCase.send(server));
    });
  }

  describe('what a confused newcomer sends that is fine', () => {
    const fine: [string, (s: TestServer) => Promise<JsonResponse>][] = [
      ['application/json; charset=utf-8', (s) => post(s, anonymousBody(s), 'application/json; charset=utf-8')],
      ['APPLICATION/JSON in capitals', (s) => post(s, anonymousBody(s), 'APPLICATION/JSON')],
      [
        'a form with charset',
        (s) =>
          post(
            s,
            new URLSearchParams(anonymousFields(s) as Record<string, string>).toString(),
            'application/x-www-form-urlencoded; charset=UTF-8',
          ),
      ],
      [
        'odd query parameters',
        (s) =>
          request(`${tokenUrl(s)}?disable_cache=%zz&%=%&a[b]=1&__proto__[polluted]=yes`, {
            method: 'POST',
            headers: { authorization: basic(s.app.appId), 'content-type': 'application/json' },
            body: anonymousBody(s),
          }),
      ],
      ['a BOM before a valid body (RFC 8259 lets a parser ignore it)', (s) => postJson(s, `\uFEFF${anonymousBody(s)}`)],
    ];
    for (const [name, send] of fine) {
      it(`${name} -> 200 or a contract 4xx`, { timeout: 10_000 }, async () => {
        const response = await send(server);
        assert.ok(response.status === 200 || (response.status >= 400 && response.status < 500), `${response.status} ${response.text}`);
        if (response.status !== 200) assert.deepEqual(errorProblems(response, response.status, response.body?.errorCode), []);
      });
    }
    it('application/json; charset=utf-8 is accepted (the usual header of HTTP clients)', async () => {
      const response = await post(server, anonymousBody(server), 'application/json; charset=utf-8');
      assert.equal(response.status, 200, response.text);
    });
  });

  describe('afterwards', () => {
    it('nothing reached Object.prototype', () => {
      const probe: Record<string, unknown> = {};
      assert.equal(probe.polluted, undefined);
      assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
    });

    it('the server still issues tokens, and the tokens issued before still work', async () => {
      const fresh = await postFields(server, adminFields(server));
      assert.equal(fresh.status, 200, fresh.text);
      const admin = await whoami(server, bearer(adminToken));
      assert.equal(admin.status, 200, admin.text);
      assert.equal(admin.body.principal, 'admin');
      const anonymous = await whoami(server, bearer(anonymousToken));
      assert.equal(anonymous.status, 200, anonymous.text);
      assert.equal(anonymous.body.principal, 'anonymous');
      const viaFresh = await whoami(server, bearer(fresh.body.access_token));
      assert.equal(viaFresh.body.principal, 'admin');
    });

    it('keep-alive connections still work after the raw garbage', async () => {
      const responses = await Promise.all(Array.from({ length: 20 }, () => whoami(server, basic(server.app.appId))));
      assert.deepEqual(
        responses.map((r) => r.status),
        Array(20).fill(200),
      );
    });
  });
});
