// Writes docs/openapi.json from the routes: each route's schema (src/http/routes/*.schema.ts) and
// the document's own parts (src/http/openapi.ts), collected by @fastify/swagger from a server over
// an empty store. `npm run openapi` builds first; tests/http/openapi.test.ts fails while the file
// is not what the routes generate.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openApiDocument } from '../dist/src/server.js';
import { openSqliteStore } from '../dist/src/store/sqlite/store.js';
import { createTessera } from '../dist/src/tessera.js';

const FILE = new URL('../docs/openapi.json', import.meta.url);

const dir = mkdtempSync(join(tmpdir(), 'tessera-openapi-'));
try {
  const tessera = createTessera({ store: openSqliteStore(join(dir, 'tessera.db')) });
  try {
    const document = await openApiDocument(tessera);
    if (document === readFileSync(FILE, 'utf8')) console.log('docs/openapi.json: already what the routes generate');
    else {
      writeFileSync(FILE, document);
      console.log('docs/openapi.json: written from the routes');
    }
  } finally {
    await tessera.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
