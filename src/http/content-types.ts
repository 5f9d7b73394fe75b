import { parse as parseQueryString } from 'node:querystring';
import type { FastifyBodyParser, FastifyInstance } from 'fastify';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { notJson } from 'tessera-tokens/internal/http/errors.js';

/** What the token endpoint accepts besides `application/json`. */
export const KII_TOKEN_REQUEST_TYPE = 'application/vnd.kii.oauthtokenrequest+json';
export const FORM_TYPE = 'application/x-www-form-urlencoded';

/**
 * Bodies of `mediaType` (by default `application/json`) parsed as Fastify parses JSON, refusing
 * prototype poisoning (a `__proto__` key, a `constructor` key holding a `prototype`); such a body is
 * valid JSON, and the answer says what is refused rather than that it is not JSON.
 */
export function acceptJsonBodies(app: FastifyInstance, mediaType = 'application/json'): void {
  app.addContentTypeParser(mediaType, { parseAs: 'string' }, explainingJsonParser(app.getDefaultJsonParser('error', 'error')));
}

/** JSON under the SDKs' vendor media type, parsed like `application/json`. */
export function acceptKiiTokenRequestBodies(app: FastifyInstance): void {
  acceptJsonBodies(app, KII_TOKEN_REQUEST_TYPE);
}

/** How every JSON object or array starts, and no form this service reads. */
const LOOKS_LIKE_JSON = /^\s*[{[]/;

/**
 * RFC 6749's own encoding: parsed into `URLSearchParams`, so repeated fields can be detected. A body
 * that looks like JSON was meant as JSON: `curl -d '{...}'` without `-H 'Content-Type:
 * application/json'` sends it labelled as a form, which would otherwise be answered as if its fields
 * were missing.
 */
export function acceptFormBodies(app: FastifyInstance): void {
  app.addContentTypeParser(FORM_TYPE, { parseAs: 'string' }, (_request, body, done) => {
    if (LOOKS_LIKE_JSON.test(body as string)) done(sentAsForm());
    else done(null, new URLSearchParams(body as string));
  });
}

/**
 * RFC 6749's encoding for the API's routes, whose schemas check a form's fields as they check a
 * JSON body's: an object without a prototype (so that no field name can be `__proto__`'s), each
 * field a string. One of `fields` sent twice is `400` (RFC 6749 §3.2: a parameter must not be
 * included more than once); any other field is left as sent, an array if repeated, for the schema.
 * A body that looks like JSON is refused as `acceptFormBodies` refuses it.
 */
export function acceptFormFields(app: FastifyInstance, fields: readonly string[]): void {
  app.addContentTypeParser(FORM_TYPE, { parseAs: 'string' }, (_request, body, done) => {
    if (LOOKS_LIKE_JSON.test(body as string)) {
      done(sentAsForm());
      return;
    }
    // Decoded as URLSearchParams decodes ('+' is a space, a malformed escape is kept as it is), with no limit on the number of fields.
    const parsed = parseQueryString(body as string, '&', '=', { maxKeys: 0 });
    for (const name of fields) {
      if (Array.isArray(parsed[name])) {
        done(new TesseraError('invalid_request', `${name} must not be repeated.`));
        return;
      }
    }
    done(null, parsed);
  });
}

function sentAsForm(): TesseraError {
  return new TesseraError(
    'invalid_request',
    'The request body looks like JSON but was sent as a form (Content-Type: application/x-www-form-urlencoded, ' +
      'as curl -d does); send it with the header Content-Type: application/json.',
  );
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

function explainingJsonParser(parse: FastifyBodyParser<string>): FastifyBodyParser<string> {
  return (request, body, done) => {
    // Fastify's JSON parser (`getDefaultJsonParser`) answers through the callback: no promise.
    void parse(request, body, (error, value) => (error === null ? done(null, value) : done(explained(error, body))));
  };
}

/**
 * What the parser refused: where a body that is not JSON broke (Fastify's own error says only that it
 * is not), or what it refused in a body that is valid JSON.
 */
function explained(error: Error, body: string): Error {
  let value: unknown;
  try {
    value = JSON.parse(body.replace(/^\uFEFF/, ''));
  } catch (syntaxError) {
    return notJson(syntaxError as Error);
  }
  const refused = prototypeKeyIn(value);
  return refused === undefined ? error : new TesseraError('invalid_request', `The request body must not contain ${refused}.`);
}

/** What secure-json-parse refuses (Fastify's JSON parser), described; undefined if there is none. */
function prototypeKeyIn(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  if (Object.hasOwn(value, '__proto__')) return 'a "__proto__" key';
  const constructor: unknown = Object.hasOwn(value, 'constructor') ? (value as { constructor: unknown }).constructor : undefined;
  if (constructor !== null && typeof constructor === 'object' && Object.hasOwn(constructor, 'prototype')) {
    return 'a "constructor" key holding a "prototype"';
  }
  for (const child of Object.values(value)) {
    const refused = prototypeKeyIn(child);
    if (refused !== undefined) return refused;
  }
  return undefined;
}
