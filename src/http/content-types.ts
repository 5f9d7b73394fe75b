import type { FastifyInstance } from 'fastify';
import { TesseraError } from '../errors.js';

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

/**
 * For routes that read no body: whatever is sent (an empty body labelled JSON, a form) is read and
 * dropped, not parsed; one over the server's body limit is `413`, as anywhere else.
 */
export function ignoreBodies(app: FastifyInstance): void {
  dropBodies(app, () => null);
}

/**
 * For routes where a body means the caller put something in the wrong place: a non-empty body,
 * whatever its type, is answered with `refusal()`. An empty one (clients often label it JSON) is fine.
 */
export function refuseBodies(app: FastifyInstance, refusal: () => TesseraError): void {
  dropBodies(app, (received) => (received > 0 ? refusal() : null));
}

/** Reads every body to its end without keeping it; `outcome` of its size decides whether that fails. */
function dropBodies(app: FastifyInstance, outcome: (received: number) => Error | null): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, payload, done) => {
    let received = 0;
    let finished = false;
    const finish = (error: Error | null) => {
      if (finished) return;
      finished = true;
      done(error, undefined);
    };
    payload.on('data', (chunk: Buffer) => {
      received += chunk.length;
      if (received > app.initialConfig.bodyLimit!) {
        payload.removeAllListeners('data');
        payload.resume();
        finish(new TesseraError('REQUEST_TOO_LARGE', 'The request body is too large.'));
      }
    });
    payload.on('end', () => finish(outcome(received)));
    payload.on('error', (error) => finish(error));
  });
}
