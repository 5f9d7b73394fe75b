import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../../src/package-root.js';

// What docs/forward-auth.md tells users to run, read from the page, so that the documented code is
// the tested code.

function page(): string {
  return readFileSync(join(PACKAGE_ROOT, 'docs', 'forward-auth.md'), 'utf8');
}

/** The ```nginx block with its placeholders filled in. */
export function documentedNginxConfig(tessera: string, upstream: string, port: number): string {
  const block = /```nginx\n([\s\S]*?)```/.exec(page())?.[1];
  assert.ok(block !== undefined, 'docs/forward-auth.md has no ```nginx block');
  let config = block;
  for (const [placeholder, value] of [
    ['server tessera:8080;', `server ${tessera};`],
    ['server app:3000;', `server ${upstream};`],
    ['listen 80;', `listen 127.0.0.1:${port};`],
  ] as const) {
    assert.equal(config.split(placeholder).length, 2, `the nginx block must contain "${placeholder}" once`);
    config = config.replace(placeholder, value);
  }
  return config;
}

/** Where the test's Tessera, upstream and nginx are, for the njs configuration's placeholders. */
export interface NjsConfigPlaces {
  /** host:port of Tessera, as nginx reaches it. */
  tessera: string;
  /** host:port of the upstream. */
  upstream: string;
  port: number;
  /** Tessera's base URL in its tokens' `iss` (PUBLIC_URL). */
  publicUrl: string;
  appId: string;
  /** The absolute path of the njs script. */
  script: string;
  /** The directory of the JWKS's cache. */
  cache: string;
}

/** The ```nginx block of the section "Checking JWTs at the edge with nginx (njs)", with its placeholders filled in. */
export function documentedNjsConfig(places: NjsConfigPlaces): string {
  const section = page().split('\n## Checking JWTs at the edge with nginx (njs)\n')[1];
  assert.ok(section !== undefined, 'docs/forward-auth.md has no section "Checking JWTs at the edge with nginx (njs)"');
  const block = /```nginx\n([\s\S]*?)```/.exec(section.split('\n## ')[0]!)?.[1];
  assert.ok(block !== undefined, 'the section "Checking JWTs at the edge with nginx (njs)" has no ```nginx block');
  let config = block;
  for (const [placeholder, value, times] of [
    ['server tessera:8080;', `server ${places.tessera};`, 1],
    ['server app:3000;', `server ${places.upstream};`, 1],
    ['listen 80;', `listen 127.0.0.1:${places.port};`, 1],
    ['https://tessera.example.com', places.publicUrl, 1],
    ['/etc/nginx/njs/tessera-jwt.js', places.script, 1],
    ['/var/cache/nginx/tessera-jwks', places.cache, 1],
    ['APP_ID', places.appId, 4],
  ] as const) {
    assert.equal(config.split(placeholder).length, times + 1, `the njs block must contain "${placeholder}" ${times} time(s)`);
    config = config.replaceAll(placeholder, value);
  }
  return config;
}

/**
 * The one-line check of `X-Tessera-App-Id` against the path that the page gives for `framework`
 * (the line after `// Express` or `// Fastify` in a ```js block), as a function of the framework's
 * `app`.
 */
export function documentedAppCheck(framework: 'Express' | 'Fastify'): (app: unknown) => void {
  const line = new RegExp(`\`\`\`js\\n// ${framework}[^\\n]*\\n([^\\n]+)\\n`).exec(page())?.[1];
  assert.ok(line !== undefined, `docs/forward-auth.md has no \`\`\`js block starting "// ${framework}"`);
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- the documented line runs as written, as in a user's server
  return new Function('app', line) as (app: unknown) => void;
}
