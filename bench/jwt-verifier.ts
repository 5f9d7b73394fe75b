/**
 * `npm run bench:jwt-verifier -- [--cold N] [--cached N]`: what checking a JWT access token offline
 * costs in another service (`TesseraJwtVerifier`), in CPU per check (user + system of the whole
 * process, Web Crypto's threads included), measured with `process.cpuUsage` over many checks.
 *
 * A local HTTP server stands in for Tessera: an app's JWKS (one Ed25519 or P-256 key) and a status
 * list, read once before measuring. Tokens are made as Tessera makes them (`signJwt`, the same claims).
 *
 * - cold: a token never seen, verified once (signature, claims, its status bit), N distinct tokens;
 * - cached: the same token again, from memory (the verified-token cache and the status bit), as
 *   `verify(token)` with one string, and as `authenticate(request)` with an `Authorization` header
 *   made anew for each check (a request's header is a new string: its hash is computed each time);
 * - for comparison: Node's one-shot Ed25519/ECDSA verify of the same signatures (`crypto.verify`,
 *   OpenSSL), the library's own synchronous check (`parseJwt` + `signedBy`, what Tessera's
 *   store-based check does), and jose's `jwtVerify` with a local key set (Web Crypto), alone.
 */
import { generateKeyPairSync, verify, type KeyObject } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deflateSync } from 'node:zlib';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { jtiBytes, parseJwt, signedBy, signJwt, type JwtAlgorithm, type JwtSigningKey } from 'tessera-tokens/internal/jwt/access-token.js';
import { TesseraJwtVerifier } from 'tessera-tokens/verifier';

const argv = process.argv.slice(2);
const option = (flag: string, fallback: number) => {
  const index = argv.indexOf(flag);
  return index >= 0 && argv[index + 1] !== undefined ? Number(argv[index + 1]) : fallback;
};
const COLD = option('--cold', 5_000);
const CACHED = option('--cached', 1_000_000);
const APP_ID = 'b3nch4pp0000jwt1';

/** CPU µs (user + system) per call, over `count` calls; awaited only when a call returns a promise. */
async function cpuPerCall(count: number, work: (index: number) => unknown): Promise<number> {
  const before = process.cpuUsage();
  for (let index = 0; index < count; index++) {
    const result = work(index);
    if (result instanceof Promise) await result;
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

interface Issuer {
  key: JwtSigningKey;
  publicKey: KeyObject;
  jwks: { keys: object[] };
}

function issuerOf(algorithm: JwtAlgorithm): Issuer {
  const { publicKey, privateKey } =
    algorithm === 'EdDSA' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const kid = `bench-${algorithm}`;
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid, alg: algorithm, use: 'sig' };
  return { key: { kid, algorithm, privateKey }, publicKey, jwks: { keys: [jwk] } };
}

async function measure(algorithm: JwtAlgorithm): Promise<Record<string, number>> {
  const issuer = issuerOf(algorithm);
  let statusList = '';
  const http = createServer((request, response) => {
    if (request.url === `/api/apps/${APP_ID}/jwks.json`) {
      response.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(JSON.stringify(issuer.jwks));
    } else if (request.url === '/api/status-lists/0') {
      response.writeHead(200, { 'content-type': 'application/statuslist+jwt' }).end(statusList);
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const appUrl = `${base}/api/apps/${APP_ID}`;
  const now = Math.floor(Date.now() / 1000);
  statusList = signJwt(issuer.key, 'statuslist+jwt', {
    sub: `${base}/api/status-lists/0`,
    iat: now,
    exp: now + 3600,
    ttl: 3600,
    status_list: { bits: 1, lst: deflateSync(Buffer.alloc(2 ** 14)).toString('base64url') },
  });
  const token = (index: number) =>
    signJwt(issuer.key, 'at+jwt', {
      iss: appUrl,
      sub: index % 2 === 0 ? 'ANONYMOUS' : '9444d5d2-d14e-445a-ad8f-6d5bf28d8fdc',
      aud: `tessera:app:${APP_ID}`,
      client_id: index % 2 === 0 ? APP_ID : '5f0c2a9e8b7d6c4e3a2b1f0e5f0c2a9e',
      exp: now + 3600,
      iat: now,
      jti: jtiBytes(Date.now()).toString('base64url'),
      app_id: APP_ID,
      status: { status_list: { idx: index % 2 ** 17, uri: `${base}/api/status-lists/0` } },
    });
  const tokens = Array.from({ length: COLD }, (_, index) => token(index));
  const verifier = await TesseraJwtVerifier.create({ issuer: appUrl, jwksUri: `${appUrl}/jwks.json`, maxCachedTokens: COLD + 10 });
  await verifier.verify(token(0)); // reads the JWKS and the status list
  const parsed = tokens.map((presented) => parseJwt(presented, 'at+jwt')!);
  const localKeys = createLocalJWKSet(issuer.jwks);
  const opensslVerify = (index: number) => {
    const { signingInput, signature } = parsed[index]!;
    const input = Buffer.from(signingInput);
    return algorithm === 'EdDSA'
      ? verify(null, input, issuer.publicKey, signature)
      : verify('sha256', input, { key: issuer.publicKey, dsaEncoding: 'ieee-p1363' }, signature);
  };
  const verificationKey = { kid: issuer.key.kid, algorithm, publicKey: issuer.publicKey };

  // Warm up each path (JIT, jose's imported key), on tokens not measured after.
  const warm = Array.from({ length: 500 }, (_, index) => token(index));
  for (const presented of warm) await jwtVerify(presented, localKeys, { typ: 'at+jwt' });
  for (let index = 0; index < 500; index++) opensslVerify(index);
  for (const presented of warm) await verifier.verify(presented);

  const results: Record<string, number> = {
    'OpenSSL verify alone (crypto.verify)': await cpuPerCall(COLD, opensslVerify),
    'parseJwt + signedBy (sync, node:crypto)': await cpuPerCall(COLD, (index) =>
      signedBy(parseJwt(tokens[index]!, 'at+jwt')!, verificationKey),
    ),
    "jose's jwtVerify alone (Web Crypto)": await cpuPerCall(COLD, (index) => jwtVerify(tokens[index]!, localKeys, { typ: 'at+jwt' })),
    'TesseraJwtVerifier, cold': await cpuPerCall(COLD, (index) => verifier.verify(tokens[index]!)),
  };
  const cached = tokens[1]!;
  results['TesseraJwtVerifier, cached: verify(token)'] = await cpuPerCall(CACHED, () => verifier.verify(cached));
  const request = { appId: APP_ID, authorization: '', path: '/api/apps/x/notes' };
  const suffix = cached.slice(3);
  results['TesseraJwtVerifier, cached: authenticate(request), a new header each time'] = await cpuPerCall(CACHED, () => {
    request.authorization = `Bearer eyJ${suffix}`;
    return verifier.authenticate(request);
  });
  await new Promise((resolve) => http.close(resolve));
  return results;
}

for (const algorithm of ['EdDSA', 'ES256'] as const) {
  console.log(`\n${algorithm}: CPU µs per check (${COLD} cold, ${CACHED} cached), Node ${process.version}`);
  for (const [name, micros] of Object.entries(await measure(algorithm))) console.log(`  ${name.padEnd(78)} ${micros.toFixed(2)}`);
}
