import type { FastifyInstance } from 'fastify';

/** What the token endpoint accepts besides `application/json`. */
export const KII_TOKEN_REQUEST_TYPE = 'application/vnd.kii.oauthtokenrequest+json';
export const FORM_TYPE = 'application/x-www-form-urlencoded';

/** JSON under the SDKs' vendor media type, parsed like `application/json` (prototype-poisoning safe). */
export function acceptKiiTokenRequestBodies(app: FastifyInstance): void {
  app.addContentTypeParser(KII_TOKEN_REQUEST_TYPE, { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'));
}

/** RFC 6749's own encoding: parsed into `URLSearchParams`, so repeated fields can be detected. */
export function acceptFormBodies(app: FastifyInstance): void {
  app.addContentTypeParser(FORM_TYPE, { parseAs: 'string' }, (_request, body, done) => {
    done(null, new URLSearchParams(body as string));
  });
}

/** For routes that read no body: whatever is sent (an empty body labelled JSON, a form) is skipped, not parsed. */
export function ignoreBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => {
    payload.resume();
    done(null, undefined);
  });
}
