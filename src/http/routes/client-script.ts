import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';
import { refuseOtherMethods } from '../methods.js';
import { CLIENT_SCRIPT_PATH } from '../paths.js';
import { clientScript as clientScriptSchema, clientScriptOtherMethods } from './client-script.schema.js';

/**
 * `tessera-tokens/client` as the server serves it: the library's compiled module
 * (`packages/tessera-tokens/dist/client/client.js`, installed as the package `tessera-tokens`)
 * without its source-map comment, since the map and the sources it names are not served.
 */
export function clientScript(): string {
  const built = readFileSync(new URL(import.meta.resolve('tessera-tokens/client')), 'utf8');
  return built.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n');
}

/**
 * `GET /tessera-client.js`: the client, for web pages to import as it is (`<script type="module">`)
 * from any origin. It is public and carries no credential, so any origin may read it
 * (`Access-Control-Allow-Origin: *`, which module scripts from another origin need; never with
 * credentials). Cached for an hour, then revalidated with its ETag, computed once at start-up.
 */
export const clientScriptRoute: FastifyPluginAsync = async (app) => {
  const script = clientScript();
  const etag = `"${createHash('sha256').update(script).digest('base64url')}"`;
  const headers = {
    'content-type': 'text/javascript; charset=utf-8',
    'cache-control': 'public, max-age=3600',
    etag,
    'access-control-allow-origin': '*',
    'cross-origin-resource-policy': 'cross-origin',
    'x-content-type-options': 'nosniff',
  };
  app.get(CLIENT_SCRIPT_PATH, { schema: clientScriptSchema }, (request, reply) => {
    reply.headers(headers);
    if (matchesEtag(request.headers['if-none-match'], etag)) return reply.code(304).send();
    return reply.send(script);
  });
  refuseOtherMethods(app, CLIENT_SCRIPT_PATH, ['GET'], { method: 'POST', schema: clientScriptOtherMethods });
};

/** RFC 9110 §13.1.2: `*`, or a list of entity tags compared weakly. */
function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
  });
}
