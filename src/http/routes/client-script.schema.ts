import { Type } from 'typebox';
import { otherMethodsSchema } from '../openapi.js';

/**
 * The client script: the schema of each route of `client-script.ts`, from which Fastify validates
 * its requests, serializes its answers and types its handlers, and from which docs/openapi.json is
 * generated (`../openapi.ts`). Its errors are documented here and answered by `../errors.ts`.
 */

/** GET /tessera-client.js */
export const clientScript = {
  tags: ['operations'],
  operationId: 'clientScript',
  summary: 'tessera-tokens/client, the JavaScript client, for web pages',
  description:
    'One ES module with no imports (the package\'s `tessera-tokens/client`, compiled, without its source-map comment): `<script type="module">import { TesseraClient } from "https://tessera.example.com/tessera-client.js";</script>`. Public: no credentials, `Access-Control-Allow-Origin: *` so that a page of any origin can import it (never `Access-Control-Allow-Credentials`). Cached for an hour (`Cache-Control: public, max-age=3600`), then revalidated with its `ETag`. See docs/client.md.',
  headers: Type.Object({
    'If-None-Match': Type.Optional(
      Type.String({ description: 'The ETag of a copy the client holds: 304 when it is still the one served.' }),
    ),
  }),
  response: {
    200: {
      description: 'The module.',
      headers: {
        ETag: { type: 'string' },
        'Cache-Control': { type: 'string', const: 'public, max-age=3600' },
        'Access-Control-Allow-Origin': { type: 'string', const: '*' },
      },
      content: { 'text/javascript': { schema: Type.String() } },
    },
    304: {
      description: 'Not modified: the copy named by If-None-Match is the one served.',
      headers: { ETag: { type: 'string' } },
      type: 'null',
    },
  },
};

/** POST /tessera-client.js */
export const clientScriptOtherMethods = otherMethodsSchema(
  'operations',
  'clientScriptOtherMethods',
  'GET, HEAD',
  'POST, PUT, DELETE and every other method but GET and HEAD answer 405 with `Allow: GET, HEAD`; no credentials are needed.',
);
