import assert from 'node:assert/strict';
import { connect, Socket } from 'node:net';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { ERROR_STATUS } from 'tessera-tokens/internal/errors.js';
import { assertError, errorProblems } from '../helpers/assert.js';
import { basic, bearer, parseJson, request } from '../helpers/http.js';
import { serverForSuite, type TestServer } from '../helpers/server.js';

/**
 * HTTP fuzzing over raw TCP against a real server running in this process: random bytes and mutated
 * valid requests (flipped, inserted and deleted bytes, truncation, duplicated headers, broken chunked
 * bodies, thousands of headers, pipelined garbage), many connections at once. Each connection must end
 * (no hang) without a 5xx, every answer that can be parsed must be the contract's error or a success,
 * and no answer may carry the ClientSecret. Afterwards the server must still issue and check tokens,
 * hold no connection open, and its memory must not grow from one batch of thousands of connections to
 * the next.
 *
 * Cases come from fast-check with a fixed seed (one per batch): `FC_SEED=<n>` runs others.
 */

const SEED = Number(process.env.FC_SEED ?? 20_251_104);
const CASES_PER_BATCH = Number(process.env.FUZZ_CASES ?? 2500);
/** A first batch warms up (JIT, caches, pools); memory is compared between the next ones. */
const WARM_UP_BATCHES = 1;
const MEASURED_BATCHES = 3;
const CONCURRENT_CONNECTIONS = 128;
/** How long to wait for a first answer before half-closing (an incomplete request gets none until then). */
const WAIT_FOR_ANSWER_MS = 250;
/** How long to wait for more answers (pipelined requests) after the last bytes arrived. */
const QUIET_AFTER_ANSWER_MS = 50;
/** After our FIN the server must answer and close within this. */
const CONNECTION_TIMEOUT_MS = 5_000;
/**
 * How much the heap and external memory (after full GCs) may grow from the end of the first measured
 * batch to the end of the third: 5,000 connections, of which about 2,000 are requests that reach the
 * routes (Node refuses the rest as malformed HTTP). Without a leak the difference stays within
 * ±0.4 MB; a retained request object, socket or listener closure (kilobytes each), or a 1 KiB buffer
 * kept per request, fails it. A leak of a few hundred bytes per request would not.
 */
const MEMORY_GROWTH_BOUND_BYTES = 1024 * 1024;

/** Statuses that docs/decisions.md gives codes of another status: Node-level refusals before any route. */
const DOCUMENTED_STATUS_EXCEPTIONS: Record<number, string[]> = {
  408: ['invalid_request'],
  417: ['invalid_request'],
  431: ['REQUEST_TOO_LARGE'],
};

const server = serverForSuite();

// ---- cases ----------------------------------------------------------------------------------------

interface FuzzCase {
  /** What the bytes are, for the failure report. */
  label: string;
  bytes: Uint8Array;
  /** Not HTTP at all, and more than blank lines: the server must answer `400` (docs/decisions.md), not just close. */
  mustAnswer: boolean;
  /** Byte offsets at which the bytes are split into separate writes. */
  splits: number[];
}

type Keys = TestServer['app'];

const CRLF = '\r\n';

/** Valid requests of every kind the server serves: the material the mutations start from. */
function validRequests(keys: Keys, host: string): Record<string, string> {
  const json = (fields: Record<string, unknown>) => JSON.stringify(fields);
  const anonymous = json({ grant_type: 'client_credentials', client_id: keys.appId, client_secret: keys.appKey });
  const admin = json({ grant_type: 'client_credentials', client_id: keys.clientId, client_secret: keys.clientSecret });
  const form = `grant_type=client_credentials&client_id=${keys.appId}&client_secret=${keys.appKey}&expiresAt=${Date.now() + 3_600_000}`;
  const tokenPath = `/api/apps/${keys.appId}/oauth2/token`;
  const post = (path: string, type: string, body: string, extra: string[] = []) =>
    [
      `POST ${path} HTTP/1.1`,
      `Host: ${host}`,
      `Authorization: ${basic(keys.appId)}`,
      `Content-Type: ${type}`,
      `Content-Length: ${Buffer.byteLength(body)}`,
      ...extra,
      '',
      body,
    ].join(CRLF);
  const chunked = (body: string) => `${body.length.toString(16)}${CRLF}${body}${CRLF}0${CRLF}${CRLF}`;
  return {
    'anonymous token (JSON)': post(tokenPath, 'application/json', anonymous),
    'admin token (JSON)': post(tokenPath, 'application/json', admin),
    'anonymous token (form)': post(tokenPath, 'application/x-www-form-urlencoded', form),
    'admin token (vendor type)': post(tokenPath, 'application/vnd.kii.OauthTokenRequest+json', admin),
    'SDK token': post(
      '/api/oauth2/token?disable_cache=1',
      'application/json',
      json({ client_id: keys.clientId, client_secret: keys.clientSecret }),
      [`X-Kii-AppID: ${keys.appId}`],
    ),
    'token, chunked body': [
      `POST ${tokenPath} HTTP/1.1`,
      `Host: ${host}`,
      `Authorization: ${basic(keys.appId)}`,
      'Content-Type: application/json',
      'Transfer-Encoding: chunked',
      '',
      chunked(anonymous),
    ].join(CRLF),
    'token, Expect: 100-continue': post(tokenPath, 'application/json', anonymous, ['Expect: 100-continue']),
    'whoami (Basic)': [`GET /api/apps/${keys.appId}/whoami HTTP/1.1`, `Host: ${host}`, `Authorization: ${basic(keys.appId)}`, '', ''].join(
      CRLF,
    ),
    'whoami (Bearer)': [
      `GET /api/apps/${keys.appId}/users/me HTTP/1.1`,
      `Host: ${host}`,
      `Authorization: ${bearer('A'.repeat(43))}`,
      '',
      '',
    ].join(CRLF),
    'revoke (form)': post(`/api/apps/${keys.appId}/oauth2/revoke`, 'application/x-www-form-urlencoded', `token=${'A'.repeat(43)}`),
    'HTTP/1.0 healthz': ['GET /healthz HTTP/1.0', '', ''].join(CRLF),
    'HEAD openapi': ['HEAD /openapi.json HTTP/1.1', `Host: ${host}`, '', ''].join(CRLF),
  };
}

/** Any Unicode code point but the surrogates, as a string. (fast-check's own `unit: 'binary'` builds a table of ~80 MB.) */
const codePoint = fc.integer({ min: 0, max: 0x10ffff - 0x800 }).map((n) => String.fromCodePoint(n < 0xd800 ? n : n + 0x800));

type Mutation = (bytes: Buffer) => Buffer;

const at = (fraction: number, length: number) => Math.min(Math.floor(fraction * (length + 1)), length);
const fraction = fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true });
const shortBytes = fc.uint8Array({ minLength: 1, maxLength: 16 });
const HEADER_END = Buffer.from(CRLF + CRLF);

function replaceHead(bytes: Buffer, change: (lines: string[]) => string[]): Buffer {
  const end = bytes.indexOf(HEADER_END);
  if (end < 0) return bytes;
  const lines = bytes.subarray(0, end).toString('latin1').split(CRLF);
  return Buffer.concat([Buffer.from(change(lines).join(CRLF), 'latin1'), bytes.subarray(end)]);
}

/** The request's head, re-framed as chunked, followed by `body` as given (valid chunks or not). */
function withChunkedBody(bytes: Buffer, body: string): Buffer {
  const head = replaceHead(bytes, (lines) => [
    ...lines.filter((line) => !/^(content-length|transfer-encoding)\s*:/i.test(line)),
    'Transfer-Encoding: chunked',
  ]);
  const end = head.indexOf(HEADER_END);
  if (end < 0) return bytes;
  return Buffer.concat([head.subarray(0, end + 4), Buffer.from(body, 'latin1')]);
}

const headerLine = (lines: string[], f: number) => 1 + Math.floor(f * Math.max(lines.length - 1, 1));

/** Mutations that know nothing of HTTP. */
const blindMutation: fc.Arbitrary<[string, Mutation]> = fc.oneof(
  fc.tuple(fraction, fc.integer({ min: 1, max: 255 })).map(([f, mask]): [string, Mutation] => [
    `flip byte at ${f.toFixed(3)} ^${mask}`,
    (b) => {
      const copy = Buffer.from(b);
      if (copy.length > 0) copy[at(f, copy.length - 1)]! ^= mask;
      return copy;
    },
  ]),
  fraction.map((f): [string, Mutation] => [`truncate at ${f.toFixed(3)}`, (b) => b.subarray(0, at(f, b.length))]),
  fc.tuple(fraction, shortBytes).map(([f, inserted]): [string, Mutation] => [
    `insert ${Buffer.from(inserted).toString('hex')} at ${f.toFixed(3)}`,
    (b) => {
      const i = at(f, b.length);
      return Buffer.concat([b.subarray(0, i), inserted, b.subarray(i)]);
    },
  ]),
  fc.tuple(fraction, fc.integer({ min: 1, max: 40 })).map(([f, n]): [string, Mutation] => [
    `delete ${n} bytes at ${f.toFixed(3)}`,
    (b) => {
      const i = at(f, b.length);
      return Buffer.concat([b.subarray(0, i), b.subarray(i + n)]);
    },
  ]),
);

/** The body changed blindly, then framed again with a Content-Length that fits: it reaches the routes. */
const bodyMutation: fc.Arbitrary<[string, Mutation]> = fc
  .oneof(
    blindMutation,
    fc
      .uint8Array({ maxLength: 5000 })
      .map((bytes): [string, Mutation] => [`body of ${bytes.length} random bytes`, () => Buffer.from(bytes)]),
  )
  .map(([label, change]): [string, Mutation] => [
    `in the body: ${label}, Content-Length fixed`,
    (b) => {
      const end = b.indexOf(HEADER_END);
      if (end < 0) return b;
      const body = change(b.subarray(end + 4));
      return Buffer.concat([
        replaceHead(b, (lines) => [
          ...lines.filter((line) => !/^(content-length|transfer-encoding)\s*:/i.test(line)),
          `Content-Length: ${body.length}`,
        ]),
        HEADER_END,
        body,
      ]);
    },
  ]);

/** A header of the request set to a value that keeps the framing: printable, latin-1 and tab bytes. */
const headerValueMutation: fc.Arbitrary<[string, Mutation]> = fc
  .tuple(
    fc.constantFrom('Authorization', 'Content-Type', 'X-Kii-AppID', 'Host', 'Expect', 'Accept', 'Connection', 'Cookie'),
    fc.oneof(
      fc.stringMatching(/^[\x20-\x7e]{0,80}$/),
      fc
        .uint8Array({ maxLength: 80 })
        .map((bytes) => Buffer.from(bytes.map((byte) => (byte < 0x20 || byte === 0x7f ? 0x09 : byte))).toString('latin1')),
    ),
  )
  .map(([name, value]): [string, Mutation] => [
    `${name}: ${JSON.stringify(value)}`,
    (b) =>
      replaceHead(b, (lines) => [
        ...lines.filter((line, i) => i === 0 || !line.toLowerCase().startsWith(`${name.toLowerCase()}:`)),
        `${name}: ${value}`,
      ]),
  ]);

/** Mutations of a request's bytes: blind ones and ones that know HTTP. */
function mutation(keys: Keys, host: string): fc.Arbitrary<[string, Mutation]> {
  const requests = Object.values(validRequests(keys, host));
  return fc.oneof(
    { weight: 4, arbitrary: blindMutation },
    headerValueMutation,
    fc.tuple(fraction, fc.integer({ min: 1, max: 3 })).map(([f, times]): [string, Mutation] => [
      `duplicate a header line ×${times}`,
      (b) =>
        replaceHead(b, (lines) => {
          const i = headerLine(lines, f);
          return [...lines.slice(0, i + 1), ...Array<string>(times).fill(lines[i] ?? 'X: y'), ...lines.slice(i + 1)];
        }),
    ]),
    fc
      .tuple(fc.integer({ min: 50, max: 4000 }), fc.integer({ min: 0, max: 40 }))
      .map(([count, size]): [string, Mutation] => [
        `add ${count} headers of ${size} bytes`,
        (b) => replaceHead(b, (lines) => [...lines, ...Array.from({ length: count }, (_, i) => `X-Fuzz-${i}: ${'v'.repeat(size)}`)]),
      ]),
    fc.constantFrom<[string, Mutation]>(
      ['LF line endings', (b) => Buffer.from(b.toString('latin1').replaceAll(CRLF, '\n'), 'latin1')],
      ['bare CR line endings', (b) => Buffer.from(b.toString('latin1').replaceAll(CRLF, '\r'), 'latin1')],
      ['obs-fold the first header', (b) => replaceHead(b, (lines) => [lines[0]!, `${lines[1] ?? 'X: a'}`, ' folded', ...lines.slice(2)])],
      [
        'Content-Length and Transfer-Encoding',
        (b) => replaceHead(b, (lines) => [...lines, 'Transfer-Encoding: chunked', 'Content-Length: 5']),
      ],
      ['two different Content-Lengths', (b) => replaceHead(b, (lines) => [...lines, 'Content-Length: 0', 'Content-Length: 7'])],
      [
        'Transfer-Encoding: gzip, chunked',
        (b) => replaceHead(b, (lines) => [...lines.filter((l) => !/^content-length/i.test(l)), 'Transfer-Encoding: gzip, chunked']),
      ],
      ['Transfer-Encoding: chunked, identity', (b) => replaceHead(b, (lines) => [...lines, 'Transfer-Encoding: chunked, identity'])],
      ['Upgrade: websocket', (b) => replaceHead(b, (lines) => [...lines, 'Connection: Upgrade', 'Upgrade: websocket'])],
      ['Expect: something', (b) => replaceHead(b, (lines) => [...lines, 'Expect: 200-ok'])],
      ['no Host', (b) => replaceHead(b, (lines) => lines.filter((l) => !/^host:/i.test(l)))],
      ['two Hosts', (b) => replaceHead(b, (lines) => [...lines, 'Host: evil.example'])],
      ['NUL in a header value', (b) => replaceHead(b, (lines) => [...lines, 'X-Nul: a\0b'])],
      ['UTF-8 in a header value', (b) => replaceHead(b, (lines) => [...lines, Buffer.from('X-Utf8: ü名😀', 'utf8').toString('latin1')])],
      ['space before colon', (b) => replaceHead(b, (lines) => [...lines, 'Content-Length : 3'])],
      [
        'huge Content-Length',
        (b) => replaceHead(b, (lines) => [...lines.filter((l) => !/^content-length/i.test(l)), 'Content-Length: 99999999999999999999']),
      ],
      [
        'negative Content-Length',
        (b) => replaceHead(b, (lines) => [...lines.filter((l) => !/^content-length/i.test(l)), 'Content-Length: -1']),
      ],
      ['HTTP/1.2', (b) => Buffer.from(b.toString('latin1').replace(/HTTP\/1\.[01]/, 'HTTP/1.2'), 'latin1')],
      ['HTTP/2.0', (b) => Buffer.from(b.toString('latin1').replace(/HTTP\/1\.[01]/, 'HTTP/2.0'), 'latin1')],
      ['HTTP/0.9 style', (b) => Buffer.from(b.toString('latin1').replace(/ HTTP\/1\.[01]/, ''), 'latin1')],
      ['absolute-form target', (b) => Buffer.from(b.toString('latin1').replace(/^(\S+) \//, `$1 http://${host}/`), 'latin1')],
      ['asterisk target', (b) => Buffer.from(b.toString('latin1').replace(/^(\S+) \S+/, '$1 *'), 'latin1')],
    ),
    fc
      .tuple(fc.stringMatching(/^[A-Z!#$%&'*+.^_`|~-]{1,12}$/), fc.boolean())
      .map(([method, lower]): [string, Mutation] => [
        `method ${method}`,
        (b) => Buffer.from(b.toString('latin1').replace(/^\S+/, lower ? method.toLowerCase() : method), 'latin1'),
      ]),
    fc.uint8Array({ maxLength: 80 }).map((target): [string, Mutation] => [
      `target ${Buffer.from(target).toString('hex')}`,
      (b) => {
        const text = b.toString('latin1');
        const start = text.indexOf(' ') + 1;
        const end = text.indexOf(' ', start);
        if (start <= 0 || end < 0) return b;
        return Buffer.concat([b.subarray(0, start), target, b.subarray(end)]);
      },
    ]),
    fc
      .tuple(fc.constantFrom('zz', 'ffffffffffffffff', '-1', '1;ext=1', ' 5', '5 ', '0x5', '3', '100000', ''), fc.boolean())
      .map(([size, last]): [string, Mutation] => [
        `chunk size ${JSON.stringify(size)}${last ? '' : ', no last chunk'}`,
        (b) => withChunkedBody(b, `${size}${CRLF}{"a":1}${CRLF}${last ? `0${CRLF}${CRLF}` : ''}`),
      ]),
    fc
      .tuple(fc.integer({ min: 0, max: 5000 }), fc.boolean())
      .map(([size, trailer]): [string, Mutation] => [
        `chunked body of ${size} bytes in 1-byte chunks${trailer ? ' with a trailer' : ''}`,
        (b) => withChunkedBody(b, `${`1${CRLF}x${CRLF}`.repeat(size)}0${CRLF}${trailer ? `X-Trailer: 1${CRLF}` : ''}${CRLF}`),
      ]),
    fc
      .oneof(
        fc.constantFrom(...requests).map((r): Buffer => Buffer.from(r, 'latin1')),
        fc.uint8Array({ maxLength: 300 }).map((u): Buffer => Buffer.from(u)),
      )
      .map((next): [string, Mutation] => [
        `pipeline ${JSON.stringify(next.toString('latin1').slice(0, 40))}…`,
        (b) => Buffer.concat([b, next]),
      ]),
  );
}

function fuzzCase(keys: Keys, host: string): fc.Arbitrary<FuzzCase> {
  const requests = validRequests(keys, host);
  const mutations = fc.oneof(
    { weight: 4, arbitrary: fc.array(mutation(keys, host), { minLength: 1, maxLength: 4 }) },
    // Well-framed: these get past Node's parser to the routes, where a leak per request would be.
    { weight: 2, arbitrary: fc.array(fc.oneof(bodyMutation, headerValueMutation), { minLength: 1, maxLength: 2 }) },
    { weight: 1, arbitrary: fc.constant([]) },
  );
  const mutated = fc
    .tuple(fc.constantFrom(...Object.keys(requests)), mutations)
    .map(([name, mutations]): { label: string; bytes: Buffer } => ({
      label: mutations.length === 0 ? name : `${name}, then ${mutations.map(([label]) => label).join('; ')}`,
      bytes: mutations.reduce<Buffer>((bytes, [, apply]) => apply(bytes), Buffer.from(requests[name]!, 'latin1')),
    }));
  const random = fc.oneof(
    fc.uint8Array({ maxLength: 3000 }).map((bytes) => ({ label: 'random bytes', bytes: Buffer.from(bytes) })),
    fc
      .tuple(
        fc.constantFrom('GET ', 'POST ', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', '\x16\x03\x01', 'HTTP/1.1 200 OK\r\n', ''),
        fc.string({ unit: codePoint, maxLength: 300 }),
      )
      .map(([prefix, rest]) => ({ label: 'random text after a prefix', bytes: Buffer.from(prefix + rest, 'utf8') })),
    fc
      .array(fc.stringMatching(/^[\x20-\x7e]{0,60}$/), { maxLength: 30 })
      .map((lines) => ({ label: 'random printable lines', bytes: Buffer.from(lines.join(CRLF) + CRLF + CRLF, 'latin1') })),
  );
  return fc
    .tuple(fc.oneof({ weight: 3, arbitrary: mutated }, { weight: 1, arbitrary: random }), fc.array(fraction, { maxLength: 3 }))
    .map(([{ label, bytes }, splitAt]) => ({
      label,
      bytes,
      mustAnswer: label.startsWith('random') && /[^\r\n]/.test(bytes.toString('latin1')),
      splits: splitAt.map((f) => at(f, bytes.length)).sort((a, b) => a - b),
    }));
}

// ---- sending --------------------------------------------------------------------------------------

interface Outcome {
  received: Buffer;
  /** The server did not close the connection within the timeout after our FIN. */
  hung: boolean;
}

/**
 * Writes the case's bytes in pieces, waits for the answers, then half-closes and collects everything
 * until the server closes. (Not a FIN right after the request: Node's server ends a connection at the
 * client's FIN, and an answer still being computed would go unseen.)
 */
function exchange(fuzz: FuzzCase): Promise<Outcome> {
  const { hostname, port } = new URL(server.baseUrl);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.setNoDelay(true);
    const received: Buffer[] = [];
    let done = false;
    let ended = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (hung: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ received: Buffer.concat(received), hung });
    };
    const endSoon = (ms: number) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        ended = true;
        if (!socket.destroyed) socket.end();
        timer = setTimeout(() => finish(true), CONNECTION_TIMEOUT_MS);
      }, ms);
    };
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      if (!ended) endSoon(QUIET_AFTER_ANSWER_MS);
    });
    socket.on('close', () => finish(false));
    // The server may reset a connection it refused while we still write: judge what arrived.
    socket.on('error', () => finish(false));
    const writeInPieces = async () => {
      let offset = 0;
      for (const split of [...fuzz.splits, fuzz.bytes.length]) {
        if (split > offset && !socket.destroyed) socket.write(fuzz.bytes.subarray(offset, split));
        offset = Math.max(offset, split);
        await new Promise((next) => setImmediate(next));
      }
      if (received.length === 0) endSoon(WAIT_FOR_ANSWER_MS);
    };
    socket.on('connect', () => void writeInPieces());
  });
}

/** Runs `work` over `items` with at most `limit` at a time; the first failure rejects. */
async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

// ---- checking -------------------------------------------------------------------------------------

interface ParsedResponse {
  status: number;
  headers: Headers;
  text: string;
  body: unknown;
}

/** The responses at the start of `data`, one after another, as far as they can be framed. */
function parseResponses(data: Buffer, requestIsHead: boolean): ParsedResponse[] {
  const responses: ParsedResponse[] = [];
  let rest = data;
  while (rest.length > 0) {
    const end = rest.indexOf(HEADER_END);
    if (end < 0) break;
    const lines = rest.subarray(0, end).toString('latin1').split(CRLF);
    const status = /^HTTP\/1\.[01] (\d{3}) /.exec(lines[0] ?? '');
    if (status === null) break;
    const headers = new Headers();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    const length = Number(headers.get('content-length') ?? 0);
    // A 100 Continue, and HEAD answers, have no body.
    const bodyLength = Number(status[1]) < 200 || (requestIsHead && responses.length === 0) ? 0 : length;
    if (rest.length < end + 4 + bodyLength) break;
    const text = rest.subarray(end + 4, end + 4 + bodyLength).toString('utf8');
    const body = parseJson(text);
    responses.push({ status: Number(status[1]), headers, text, body });
    rest = rest.subarray(end + 4 + bodyLength);
  }
  return responses;
}

/** Everything wrong with what a connection got back; empty when it keeps the contract. */
function outcomeProblems(fuzz: FuzzCase, outcome: Outcome): string[] {
  const problems: string[] = [];
  if (fuzz.mustAnswer && outcome.received.length === 0) problems.push('garbage got no answer: the connection was just closed');
  if (outcome.hung) problems.push(`the connection was still open ${CONNECTION_TIMEOUT_MS} ms after the request ended (a hang)`);
  const all = outcome.received.toString('latin1');
  const serverError = /HTTP\/1\.[01] 5\d\d/.exec(all);
  if (serverError !== null) problems.push(`a 5xx: ${all.slice(serverError.index, serverError.index + 300)}`);
  if (all.includes(server.app.clientSecret)) problems.push('an answer carries the ClientSecret');
  const isHead = /^HEAD /.test(Buffer.from(fuzz.bytes).toString('latin1'));
  for (const response of parseResponses(outcome.received, isHead)) {
    // Interim (100 Continue) and success answers; a HEAD answer has no body to judge.
    if (response.status < 300 || (isHead && response.text === '')) continue;
    const code = (response.body as { errorCode?: unknown } | undefined)?.errorCode;
    if (typeof code !== 'string' || !Object.hasOwn(ERROR_STATUS, code)) {
      problems.push(`not a contract error: ${response.status} ${response.text.slice(0, 200)}`);
      continue;
    }
    const status = DOCUMENTED_STATUS_EXCEPTIONS[response.status]?.includes(code)
      ? response.status
      : ERROR_STATUS[code as keyof typeof ERROR_STATUS];
    problems.push(...errorProblems(response, status, code));
  }
  return problems;
}

function describeCase(fuzz: FuzzCase): string {
  const text = Buffer.from(fuzz.bytes).toString('latin1');
  return `${fuzz.label}\n${fuzz.bytes.length} bytes, written in pieces split at ${JSON.stringify(fuzz.splits)}:\n${JSON.stringify(text.length > 1500 ? `${text.slice(0, 1500)}…` : text)}`;
}

// ---- memory ---------------------------------------------------------------------------------------

/** A full garbage collection, exposed on demand when the process was not started with --expose-gc. */
function fullGc(): () => void {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (exposed !== undefined) return exposed;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

async function settledMemory(gc: () => void): Promise<NodeJS.MemoryUsage> {
  // Let closed sockets and pending callbacks finish, then collect until the heap stops shrinking.
  await sleep(200);
  let previous = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 10; i++) {
    gc();
    await sleep(20);
    const heap = process.memoryUsage().heapUsed;
    if (heap >= previous - 64 * 1024) break;
    previous = heap;
  }
  return process.memoryUsage();
}

/**
 * The server's end of every connection still open. (`_getActiveHandles` is Node's undocumented but
 * long-standing list of handles; the server's own connection list is not reachable from here.)
 */
function serverConnections(): number {
  const port = Number(new URL(server.baseUrl).port);
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
  return handles.filter((handle) => handle instanceof Socket && handle.localPort === port).length;
}

async function waitForServerConnections(timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  while (serverConnections() > 0 && Date.now() < deadline) await sleep(25);
  return serverConnections();
}

// ---- the test -------------------------------------------------------------------------------------

/** What the process holds: the JS heap, and the memory of Buffers and other objects outside it. */
const retained = (memory: NodeJS.MemoryUsage) => memory.heapUsed + memory.external;

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MB`;

async function assertServerWorks(): Promise<void> {
  const token = await request(`${server.appUrl}/oauth2/token`, {
    method: 'POST',
    headers: { authorization: basic(server.app.appId), 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: server.app.clientId, client_secret: server.app.clientSecret }),
    signal: AbortSignal.timeout(5_000),
  });
  assert.equal(token.status, 200, token.text);
  const whoami = await request(`${server.appUrl}/whoami`, {
    headers: { authorization: bearer(token.body.access_token) },
    signal: AbortSignal.timeout(5_000),
  });
  assert.equal(whoami.status, 200, whoami.text);
  assert.deepEqual(whoami.body, { appId: server.app.appId, principal: 'admin', id: server.app.adminId, auth: 'bearer', expiresAt: null });
  const refused = await request(`${server.appUrl}/whoami`, {
    headers: { authorization: bearer('A'.repeat(43)) },
    signal: AbortSignal.timeout(5_000),
  });
  assertError(refused, 401, 'INVALID_TOKEN');
}

describe('HTTP fuzzing over raw sockets', () => {
  it('never hangs, 5xxs, leaks a secret or breaks the contract; the server works after, with flat memory', async () => {
    const gc = fullGc();
    const host = new URL(server.baseUrl).host;
    const arbitrary = fuzzCase(server.app, host);
    await assertServerWorks();
    const baseline = await settledMemory(gc);
    console.log(`before: heapUsed ${mb(baseline.heapUsed)}, external ${mb(baseline.external)}, rss ${mb(baseline.rss)}`);
    const measured: number[] = [];
    const outcomes = new Map<string, number>();
    for (let batch = 0; batch < WARM_UP_BATCHES + MEASURED_BATCHES; batch++) {
      const started = performance.now();
      const seed = SEED + batch;
      // Generated per batch and dropped after it, so that the cases themselves are not measured.
      await pool(fc.sample(arbitrary, { seed, numRuns: CASES_PER_BATCH }), CONCURRENT_CONNECTIONS, async (fuzz) => {
        const outcome = await exchange(fuzz);
        const first = /^HTTP\/1\.[01] (\d{3})/.exec(outcome.received.toString('latin1'));
        const key = outcome.hung ? 'hung' : (first?.[1] ?? 'closed without an answer');
        outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
        const problems = outcomeProblems(fuzz, outcome);
        assert.deepEqual(
          problems,
          [],
          `batch seed ${seed} (FC_SEED=${SEED})\n${describeCase(fuzz)}\nreceived: ${JSON.stringify(outcome.received.toString('latin1').slice(0, 600))}`,
        );
      });
      // fetch's keep-alive connection from assertServerWorks may linger up to the server's keep-alive timeout.
      const open = await waitForServerConnections(6_000);
      assert.equal(open, 0, `${open} connections still open on the server after batch ${batch + 1}`);
      const memory = await settledMemory(gc);
      if (batch >= WARM_UP_BATCHES) measured.push(retained(memory));
      console.log(
        `batch ${batch + 1}${batch < WARM_UP_BATCHES ? ' (warm-up)' : ''}: ${CASES_PER_BATCH} connections, seed ${seed}, ${Math.round(performance.now() - started)} ms; ` +
          `heapUsed ${mb(memory.heapUsed)}, external ${mb(memory.external)}, rss ${mb(memory.rss)}`,
      );
    }
    console.log(
      `first status line per connection: ${[...outcomes]
        .sort((a, b) => b[1] - a[1])
        .map(([key, n]) => `${key} ×${n}`)
        .join(', ')}`,
    );

    await assertServerWorks();
    const growth = measured.at(-1)! - measured[0]!;
    assert.ok(
      growth <= MEMORY_GROWTH_BOUND_BYTES,
      `heapUsed + external grew by ${mb(growth)} over ${MEASURED_BATCHES - 1} batches (bound ${mb(MEMORY_GROWTH_BOUND_BYTES)}): ${measured.map(mb).join(' → ')}`,
    );
  });
});
