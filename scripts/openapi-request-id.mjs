// docs/openapi.json is written by hand. `X-Request-Id`, which every request may carry and every
// answer carries, is defined once there, in components/parameters/XRequestId and
// components/headers/XRequestId (their pattern is src/http/request-id.ts's, which
// tests/http/openapi.test.ts checks). This adds a reference to them wherever one is missing: in the
// parameters of each path (and so of each of its operations), and in the headers of each response,
// inline or in components/responses (a response used by reference gets it there, once). It changes
// nothing else, and nothing at all when nothing lacks it.
//
// After adding a path or a response to docs/openapi.json: `node scripts/openapi-request-id.mjs`
// (tests/http/openapi.test.ts names what lacks the header until then).

import { readFileSync, writeFileSync } from 'node:fs';

const FILE = new URL('../docs/openapi.json', import.meta.url);
const PARAMETER = { $ref: '#/components/parameters/XRequestId' };
const HEADER = { $ref: '#/components/headers/XRequestId' };
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

const text = readFileSync(FILE, 'utf8');
const document = JSON.parse(text);
if (document.components?.parameters?.XRequestId === undefined || document.components?.headers?.XRequestId === undefined) {
  throw new Error('docs/openapi.json has no components/parameters/XRequestId or components/headers/XRequestId');
}

const withHeader = (response) => {
  if (response.$ref !== undefined) return; // a component, given the header below
  response.headers ??= {};
  response.headers['X-Request-Id'] ??= HEADER;
};

for (const [path, item] of Object.entries(document.paths)) {
  if (item.parameters === undefined) {
    document.paths[path] = { parameters: [PARAMETER], ...item }; // first, where the other paths have theirs
  } else if (!item.parameters.some((parameter) => parameter.$ref === PARAMETER.$ref)) {
    item.parameters.push(PARAMETER);
  }
  for (const method of METHODS) {
    for (const response of Object.values(item[method]?.responses ?? {})) withHeader(response);
  }
}
for (const response of Object.values(document.components.responses ?? {})) withHeader(response);

const updated = `${JSON.stringify(document, null, 2)}\n`;
if (updated === text) console.log('docs/openapi.json: X-Request-Id is already everywhere');
else {
  writeFileSync(FILE, updated);
  console.log('docs/openapi.json: X-Request-Id added where it was missing');
}
