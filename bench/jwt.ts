/**
 * `npm run bench:jwt -- [--calls N] [--held 1000,10000,100000]`: what JWT access tokens (RFC 9068)
 * cost in the server's own process, for each key type (EdDSA, then ES256), on a SQLite store in a
 * temporary directory (docs/benchmarks.md, "JWT access tokens"). Each figure is CPU time (user +
 * system, every thread of the process) per call, the least of three repetitions of N calls (5,000
 * by default; 20 N for the checks answered from memory):
 *
 * - issuing: `signJwt` alone (with the claims the issuer makes), and a token request through
 *   `TokenIssuer.issue` (no HTTP) for an app with JWT access tokens and for one with opaque tokens:
 *   anonymous ones one at a time, admin ones 25 at a time (their rows share a commit, as under load);
 * - checking, through `TokenChecker.principal` as authentication calls it (the token cut from an
 *   `Authorization` header each time): an anonymous JWT cold (each token checked for the first time,
 *   so its signature is verified) and cached (one token again and again), an admin JWT (its row
 *   cached), and an opaque anonymous and admin token the same ways, to compare;
 * - for reference: `node:crypto`'s `verify` of the signature alone (OpenSSL), and `jose`'s
 *   `jwtVerify` with a local JWKS (`createLocalJWKSet`; issuer, audience and `typ` checked): what a
 *   standard library costs cold;
 * - the cached check over 10³, 10⁴ and 10⁵ distinct anonymous JWTs checked round-robin, with the
 *   default cache budget (CACHE_MEMORY_MB 512) and with one that holds every token.
 *
 * Prints JSON, with `goals`: a check ≤ 30 µs cold and ≤ 2 µs cached, issuance ≥ 0.5× the opaque
 * token's (here without HTTP: `npm run bench:cpu` measures it through the server).
 */
import { verify } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, jwtVerify } from 'jose';
import type { AppRecord } from 'tessera-tokens/internal/apps/app.js';
import { cacheBudget, DEFAULT_CACHE_MEMORY_MB } from 'tessera-tokens/internal/cache/budget.js';
import {
  ACCESS_TOKEN_TYPE,
  JWT_ALGORITHMS,
  parseJwt,
  publicKeyOf,
  signJwt,
  type JwtAlgorithm,
} from 'tessera-tokens/internal/jwt/access-token.js';
import { VERIFIED_TOKEN_BYTES } from 'tessera-tokens/internal/jwt/access-tokens.js';
import { createTokenChecking } from 'tessera-tokens/internal/token-checking.js';
import { anonymousRequest, OPERATOR } from '../src/request-context.js';
import { openSqliteStore } from '../src/store/sqlite/store.js';
import { createTessera } from '../src/tessera.js';

const argv = process.argv.slice(2);
const option = (flag: string, fallback: string) => {
  const index = argv.indexOf(flag);
  return index >= 0 && argv[index + 1] !== undefined ? argv[index + 1]! : fallback;
};
const CALLS = Number(option('--calls', '5000'));
/** The checks answered from memory are cheap: more calls, for a figure well above `process.cpuUsage`'s resolution. */
const CACHED_CALLS = 20 * CALLS;
const HELD = option('--held', '1000,10000,100000').split(',').map(Number);
const REPEATS = 3;
/** Admin tokens requested at a time: their rows share a commit, as under load. */
const BATCH = 25;

const log = (line: string) => process.stderr.write(`${line}\n`);

/**
 * CPU µs (user + system) per call of `work`, over `count` calls. A call answered from memory (no
 * promise) is not awaited, as authentication does not await it. Every call must succeed (a truthy
 * answer): a refused token would measure the refusal.
 */
async function cpuPerCall(count: number, work: (index: number) => unknown): Promise<number> {
  let refused = 0;
  const before = process.cpuUsage();
  for (let index = 0; index < count; index++) {
    const result = work(index);
    if (!(result instanceof Promise ? await result : result)) refused++;
  }
  const used = process.cpuUsage(before);
  if (refused > 0) throw new Error(`${refused} of ${count} calls failed`);
  return (used.user + used.system) / count;
}

/** The least of `REPEATS` measures (the machine's noise only adds time; the first also warms the code up). */
async function leastOf(measure: () => Promise<number>): Promise<number> {
  let least = Infinity;
  for (let repeat = 0; repeat < REPEATS; repeat++) least = Math.min(least, await measure());
  return least;
}

/** As authentication has it: the token cut from the `Authorization` header, a string of its own whose hash V8 computes again. */
const presented = (header: string) => header.slice('Bearer '.length);
const round = (us: number) => Math.round(us * 100) / 100;

const work = mkdtempSync(join(tmpdir(), 'tessera-bench-jwt-'));
const store = openSqliteStore(join(work, 'tessera.db'));
const tessera = createTessera({
  store,
  keyEncryptionKey: Buffer.alloc(32, 7),
  publicUrl: 'https://tessera.example',
  rateLimits: { enabled: false, tokenRequestsPerAddressPerMinute: 1, adminFailuresPerAddressPerMinute: 1, adminFailuresPerAppPerMinute: 1 },
});
const jwtApp = await tessera.apps.create('JWT bench');
await tessera.apps.configure(jwtApp.appId, { accessTokenFormat: 'jwt' }, OPERATOR);
const opaqueApp = await tessera.apps.create('Opaque bench');
const context = anonymousRequest('127.0.0.1');
const anonymousCredentials = (app: { appId: string; appKey: string }) => ({
  credentials: { clientId: app.appId, clientSecret: app.appKey },
  expiresAt: null,
});
const adminCredentials = (app: { clientId: string; clientSecret: string }) => ({
  credentials: { clientId: app.clientId, clientSecret: app.clientSecret },
  expiresAt: null,
});
const recordOf = async (appId: string) => (await store.apps.findById(appId)) as AppRecord;
const opaque = await recordOf(opaqueApp.appId);
/** Anonymous and admin tokens requested `count` at a time, as `Bearer` headers. */
const issued = async (app: AppRecord, request: ReturnType<typeof adminCredentials>, count: number) =>
  (await Promise.all(Array.from({ length: count }, () => tessera.issuer.issue(app, request, context)))).map(
    ({ accessToken }) => `Bearer ${accessToken}`,
  );

/** Per key type: CPU µs per call. */
interface KeyTypeResults {
  issueCpuUs: Record<string, number>;
  checkCpuUs: Record<string, number>;
  referenceCpuUs: Record<string, number>;
  /** The cached check, round-robin over this many distinct tokens, per cache budget. */
  cachedCheckByTokensHeld: Record<string, Record<string, number>>;
}
const results = {} as Record<JwtAlgorithm, KeyTypeResults>;
const defaultBudgetTokens = Math.floor(cacheBudget(DEFAULT_CACHE_MEMORY_MB).jwtTokens / VERIFIED_TOKEN_BYTES);
/** A CACHE_MEMORY_MB whose share for verified JWTs holds every token of the largest count, with room to spare (at least the default). */
const holdingAllMb = Math.max(
  DEFAULT_CACHE_MEMORY_MB,
  Math.ceil((Math.max(...HELD) * VERIFIED_TOKEN_BYTES * 1.1) / cacheBudget(1).jwtTokens),
);

try {
  for (const algorithm of JWT_ALGORITHMS) {
    log(`${algorithm}: issuing`);
    await tessera.jwt.keys.rotate({ algorithm, aheadMs: 0 });
    const app = await recordOf(jwtApp.appId);
    const signingKey = await tessera.jwt.keys.signingKey();
    if (signingKey.algorithm !== algorithm) throw new Error(`the key that signs is ${signingKey.algorithm}, not ${algorithm}`);
    /** Fresh anonymous JWTs, as `Bearer` headers: through the issuer alone (no event, no client check), to make many quickly. */
    const anonymousJwts = async (count: number) => {
      const headers: string[] = [];
      for (let index = 0; index < count; index++) {
        headers.push(`Bearer ${await tessera.jwt.issuer.anonymous(app, Date.now(), Date.now() + 3_600_000, null)}`);
      }
      return headers;
    };
    const [sample] = await anonymousJwts(1);
    const claims = JSON.parse(Buffer.from(presented(sample!).split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

    const issueCpuUs = {
      signJwt: await leastOf(() => cpuPerCall(CALLS, () => signJwt(signingKey, ACCESS_TOKEN_TYPE, claims))),
      anonymousJwt: await leastOf(() => cpuPerCall(CALLS, () => tessera.issuer.issue(app, anonymousCredentials(jwtApp), context))),
      anonymousOpaque: await leastOf(() => cpuPerCall(CALLS, () => tessera.issuer.issue(opaque, anonymousCredentials(opaqueApp), context))),
      adminJwt: (await leastOf(() => cpuPerCall(CALLS / BATCH, () => issued(app, adminCredentials(jwtApp), BATCH)))) / BATCH,
      adminOpaque: (await leastOf(() => cpuPerCall(CALLS / BATCH, () => issued(opaque, adminCredentials(opaqueApp), BATCH)))) / BATCH,
    };

    log(`${algorithm}: checking`);
    const checker = tessera.checker;
    const principalOf = (record: AppRecord, header: string) => checker.principal(record, presented(header));
    const [adminJwt] = await issued(app, adminCredentials(jwtApp), 1);
    const [adminOpaque] = await issued(opaque, adminCredentials(opaqueApp), 1);
    const [anonymousOpaque] = await issued(opaque, anonymousCredentials(opaqueApp), 1);
    for (const [record, header, kind] of [
      [app, sample!, 'anonymous'],
      [app, adminJwt!, 'admin'],
      [opaque, adminOpaque!, 'admin'],
      [opaque, anonymousOpaque!, 'anonymous'],
    ] as const) {
      if ((await principalOf(record, header))?.kind !== kind) throw new Error(`a ${kind} token was not accepted`);
    }
    /** Each repetition checks tokens never checked before. */
    const cold = async (record: AppRecord, fresh: () => Promise<string[]>) =>
      leastOf(async () => {
        const headers = await fresh();
        return cpuPerCall(headers.length, (index) => principalOf(record, headers[index]!));
      });
    const cached = (record: AppRecord, header: string) => leastOf(() => cpuPerCall(CACHED_CALLS, () => principalOf(record, header)));
    const checkCpuUs = {
      anonymousJwtCold: await cold(app, () => anonymousJwts(CALLS)),
      anonymousJwtCached: await cached(app, sample!),
      adminJwtRowCached: await cached(app, adminJwt!),
      anonymousOpaqueCold: await cold(opaque, () => issued(opaque, anonymousCredentials(opaqueApp), CALLS)),
      anonymousOpaqueCached: await cached(opaque, anonymousOpaque!),
      adminOpaqueRowCached: await cached(opaque, adminOpaque!),
    };

    log(`${algorithm}: references`);
    const pool = await anonymousJwts(CALLS);
    const jwks = await tessera.jwt.keys.jwks();
    const publicKey = publicKeyOf(jwks.keys.find((key) => key.kid === signingKey.kid)!);
    const parsed = pool.map((header) => parseJwt(presented(header), ACCESS_TOKEN_TYPE)!);
    const inputs = parsed.map(({ signingInput }) => Buffer.from(signingInput));
    const localJwks = createLocalJWKSet(jwks);
    const expected = { issuer: claims.iss as string, audience: claims.aud as string, typ: ACCESS_TOKEN_TYPE, algorithms: [algorithm] };
    const referenceCpuUs = {
      opensslVerify: await leastOf(() =>
        cpuPerCall(CALLS, (index) =>
          algorithm === 'EdDSA'
            ? verify(null, inputs[index]!, publicKey, parsed[index]!.signature)
            : verify('sha256', inputs[index]!, { key: publicKey, dsaEncoding: 'ieee-p1363' }, parsed[index]!.signature),
        ),
      ),
      joseJwtVerify: await leastOf(() => cpuPerCall(CALLS, (index) => jwtVerify(presented(pool[index]!), localJwks, expected))),
    };

    const cachedCheckByTokensHeld: Record<string, Record<string, number>> = {};
    const held = await anonymousJwts(Math.max(...HELD));
    for (const [budget, cacheMemoryMb] of [
      [`CACHE_MEMORY_MB ${DEFAULT_CACHE_MEMORY_MB} (holds ${defaultBudgetTokens})`, DEFAULT_CACHE_MEMORY_MB],
      [`CACHE_MEMORY_MB ${holdingAllMb} (holds them all)`, holdingAllMb],
    ] as const) {
      cachedCheckByTokensHeld[budget] = {};
      for (const count of HELD) {
        log(`${algorithm}: ${count} tokens held, ${budget}`);
        // A checker of its own, empty, as the server's is after a start.
        const checking = createTokenChecking(store, { clock: tessera.clock, cacheMemoryMb });
        const check = (index: number) => checking.tokens.principal(app, presented(held[index % count]!));
        await cpuPerCall(count, check);
        cachedCheckByTokensHeld[budget][count] = round(await cpuPerCall(Math.max(count, CACHED_CALLS), check));
        // Its caches emptied: the store's change signal keeps it, and what it holds would weigh on the next measures.
        checking.jwts.forgetAll();
        checking.forget();
      }
    }

    const rounded = (values: Record<string, number>) => Object.fromEntries(Object.entries(values).map(([name, us]) => [name, round(us)]));
    results[algorithm] = {
      issueCpuUs: rounded(issueCpuUs),
      checkCpuUs: rounded(checkCpuUs),
      referenceCpuUs: rounded(referenceCpuUs),
      cachedCheckByTokensHeld,
    };
  }
} finally {
  await tessera.close();
  rmSync(work, { recursive: true, force: true });
}

const most = Math.max(...HELD);
const report = {
  node: process.version,
  calls: CALLS,
  cachedCalls: CACHED_CALLS,
  repeats: REPEATS,
  jwtTokensTheDefaultCacheHolds: defaultBudgetTokens,
  results,
  goals: Object.fromEntries(
    JWT_ALGORITHMS.map((algorithm) => {
      const { issueCpuUs, checkCpuUs, cachedCheckByTokensHeld } = results[algorithm];
      const [defaultBudget, holdingAll] = Object.values(cachedCheckByTokensHeld);
      return [
        algorithm,
        {
          'anonymous check ≤ 30 µs cold': checkCpuUs.anonymousJwtCold! <= 30,
          'anonymous check ≤ 2 µs cached': checkCpuUs.anonymousJwtCached! <= 2,
          [`anonymous check ≤ 2 µs cached, ${most} tokens held, default cache`]: defaultBudget![most]! <= 2,
          [`anonymous check ≤ 2 µs cached, ${most} tokens held, a cache that holds them`]: holdingAll![most]! <= 2,
          'admin check (row cached) ≤ 2 µs': checkCpuUs.adminJwtRowCached! <= 2,
          // CPU per token: the opaque token's over the JWT's is the JWT's throughput as a share of the opaque token's.
          'anonymous issuance ≥ 0.5× the opaque token’s (in process)': issueCpuUs.anonymousOpaque! / issueCpuUs.anonymousJwt! >= 0.5,
          'admin issuance ≥ 0.5× the opaque token’s (in process)': issueCpuUs.adminOpaque! / issueCpuUs.adminJwt! >= 0.5,
        },
      ];
    }),
  ),
};
console.log(JSON.stringify(report, null, 2));
