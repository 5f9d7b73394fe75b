/*
 * tessera-jwt.js: nginx checks Tessera's JWT access tokens (RFC 9068) itself, at the edge of a
 * service, without asking Tessera for each request. A script for nginx's JavaScript module, njs
 * 0.7.9 or later (tested with Debian 12's `libnginx-mod-http-js`, njs 0.7.9; nginx.org's packages
 * call it `nginx-module-njs`).
 *
 * docs/forward-auth.md, "Checking JWTs at the edge with nginx (njs)", has the whole configuration
 * (tests/proxy/nginx-jwt.test.ts runs it as printed there). In short:
 *
 *   js_import tessera_jwt from /etc/nginx/njs/tessera-jwt.js;
 *   js_var $tessera_jwt_app_id;  (and the other variables below)
 *   set $tessera_jwt_issuer https://tessera.example.com/api/apps/APP_ID;
 *   location / { js_content tessera_jwt.verify; }
 *   location @tessera_jwt_upstream { proxy_set_header X-Tessera-App-Id $tessera_jwt_app_id; …; proxy_pass http://app; }
 *   location = /_tessera_jwks { internal; proxy_pass http://tessera/api/apps/APP_ID/jwks.json; proxy_cache …; }
 *   location = /_tessera_jwks_fresh { the same, with a cache of its own and a shorter time }
 *
 * What it reads (nginx variables):
 *   $tessera_jwt_issuer    the app's issuer, `{Tessera's PUBLIC_URL}/api/apps/{appId}`: a token's `iss` (required)
 *   $tessera_jwt_audience  what a token's `aud` must hold, one of these space-separated values;
 *                          `tessera:app:{appId}` when empty or not defined (the app's own `accessTokenAudience`, if it set one)
 *   $tessera_jwt_upstream  where an admitted request goes (an internal redirect); `@tessera_jwt_upstream` when empty or not defined
 *
 * A request is admitted when its `Authorization: Bearer` token is:
 *   - a compact JWS of at most 6144 characters, three base64url parts, with JSON objects for header and claims;
 *   - of the header `{alg, kid, typ}` exactly, `typ` `at+jwt` and `alg` `ES256`. njs 0.7 has no Ed25519 in its
 *     WebCrypto: an `EdDSA` token (Tessera's default key) is refused, so the app's tokens must be signed with an
 *     ES256 key (`tessera keys rotate --jwt --algorithm ES256`);
 *   - of a `kid` that the JWKS holds (an EC P-256 key): first the copy of /_tessera_jwks that nginx's proxy cache
 *     keeps (`proxy_cache_valid`: 300 s in the documented configuration); for a `kid` not there, /_tessera_jwks_fresh,
 *     a cache of its own with a shorter time (30 s), so that a new key is learnt at once and tokens of unknown
 *     keys make Tessera read at most once per that time;
 *   - signed by that key (ECDSA P-256 with SHA-256; the signature is r || s, as WebCrypto takes it);
 *   - of the issuer `$tessera_jwt_issuer`, an `aud` holding the audience, `app_id` the issuer's app, an `exp`
 *     in the future (and an `nbf`, if any, in the past), and `sub`, `client_id`, `jti`, `iat` as Tessera writes them.
 * It then sets, for the upstream's `proxy_set_header` lines (empty when the token has none; an empty
 * `proxy_set_header` value sends no header, which removes the one a client sent):
 *   $tessera_jwt_app_id        X-Tessera-App-Id                the AppID
 *   $tessera_jwt_principal     X-Tessera-Principal             `admin`, or `anonymous` (`sub` ANONYMOUS)
 *   $tessera_jwt_principal_id  X-Tessera-Principal-Id          `sub`: the admin id, or ANONYMOUS
 *   $tessera_jwt_auth          X-Tessera-Auth                  `bearer`
 *   $tessera_jwt_expires_at    X-Tessera-Expires-At            `exp`, in UNIX ms
 *   $tessera_jwt_scope         X-Tessera-Scope                 the token's `scope`, if it has one
 *   $tessera_jwt_attestation   X-Tessera-Attestation-Provider  an anonymous token's `attestation`, if it has one
 * and redirects the request to the upstream's location. These are the headers of forward authentication.
 *
 * Anything else is refused with Tessera's answer, and nothing reaches the upstream: `401` and the
 * JSON body `{"errorCode", "error", "error_description", "message"}`, `INVALID_TOKEN` with
 * `WWW-Authenticate: Bearer error="invalid_token"`, or `UNAUTHORIZED` (no `Authorization`) with
 * `WWW-Authenticate: Basic realm="tessera", Bearer realm="tessera"`. Basic anonymous access, which
 * needs the app's configuration, is `INVALID_TOKEN`. When no JWKS can be had (Tessera unreachable
 * and nothing cached): `503 SERVICE_UNAVAILABLE`, `Retry-After: 2`; a `$tessera_jwt_issuer` that is
 * not an app's: `500 INTERNAL_ERROR`, and the error log says why. Each refusal's reason is in
 * nginx's error log at level `info` ("tessera-jwt: refused (signature)").
 *
 * What it does not check: the token's status (its Token Status List). A revoked token passes here
 * until its `exp`, 24 hours at most after its issue; forward authentication (docs/forward-auth.md)
 * refuses it at once. Nor the `/me` rule, admin-only paths or scopes: the upstream decides on
 * `X-Tessera-Principal` and `X-Tessera-Scope`.
 *
 * Plain njs 0.7: no destructuring, `for…of`, spread, classes, `?.`, `??`, default parameters, or `await`
 * in a call's arguments, which it does not parse (eslint.config.js refuses them here).
 */

var MAX_JWT_LENGTH = 6144;
var BASE64URL = /^[A-Za-z0-9_-]+$/;
var ANONYMOUS_ID = 'ANONYMOUS';
/** DER of a SubjectPublicKeyInfo of an EC P-256 key, up to its uncompressed point (0x04 || x || y). */
var P256_SPKI_PREFIX = '3059301306072a8648ce3d020106082a8648ce3d030107034200';
var INVALID_TOKEN_MESSAGE = 'The access token is invalid, expired or revoked.';

/** A refusal: its reason (for the log) and, unless it is INVALID_TOKEN, its code and message. */
function Refusal(problem, code, message) {
  this.problem = problem;
  this.code = code || 'INVALID_TOKEN';
  this.message = message || INVALID_TOKEN_MESSAGE;
}

function refuse(problem) {
  throw new Refusal(problem);
}

var CHALLENGES = {
  INVALID_TOKEN: 'Bearer error="invalid_token"',
  UNAUTHORIZED: 'Basic realm="tessera", Bearer realm="tessera"',
};
var STATUS = { INVALID_TOKEN: 401, UNAUTHORIZED: 401, INTERNAL_ERROR: 500, SERVICE_UNAVAILABLE: 503 };

/** The js_content handler: admits the request (internal redirect to the upstream) or answers the refusal. */
async function verify(r) {
  var identity;
  try {
    identity = await check(r);
  } catch (e) {
    var refusal = e;
    if (!(e instanceof Refusal)) {
      // a configuration error ($tessera_jwt_issuer), or one of this script
      r.error('tessera-jwt: ' + e);
      refusal = new Refusal('error', 'INTERNAL_ERROR', 'The service failed to handle this request.');
    }
    r.log('tessera-jwt: refused (' + refusal.problem + ')');
    answer(r, refusal);
    return;
  }
  var names = Object.keys(identity);
  for (var i = 0; i < names.length; i++) r.variables['tessera_jwt_' + names[i]] = identity[names[i]];
  r.internalRedirect(setting(r, 'tessera_jwt_upstream') || '@tessera_jwt_upstream');
}

function answer(r, refusal) {
  var message = refusal.message.split('%').join(' percent');
  r.headersOut['Content-Type'] = 'application/json; charset=utf-8';
  if (CHALLENGES[refusal.code] !== undefined) r.headersOut['WWW-Authenticate'] = CHALLENGES[refusal.code];
  if (refusal.code === 'SERVICE_UNAVAILABLE') r.headersOut['Retry-After'] = '2';
  r.return(
    STATUS[refusal.code],
    JSON.stringify({ errorCode: refusal.code, error: refusal.code, error_description: message, message: message }),
  );
}

/** A variable of the configuration, or '' when it is empty or not defined. */
function setting(r, name) {
  var value = r.variables[name];
  return typeof value === 'string' ? value.trim() : '';
}

/** The identity a valid token stands for; throws a Refusal otherwise. */
async function check(r) {
  var issuer = setting(r, 'tessera_jwt_issuer').replace(/\/$/, '');
  var appId = appIdOf(issuer);
  if (appId === undefined)
    throw new Error("$tessera_jwt_issuer must be an app's issuer, {Tessera's URL}/api/apps/{appId}: \"" + issuer + '"');
  var audiences = setting(r, 'tessera_jwt_audience');
  audiences = audiences === '' ? ['tessera:app:' + appId] : audiences.split(/\s+/);

  var token = bearerToken(r.headersIn.Authorization);
  if (token.length > MAX_JWT_LENGTH) refuse('malformed');
  var parts = token.split('.');
  if (parts.length !== 3 || !BASE64URL.test(parts[0])) refuse('malformed');
  // The header first: `alg: none` (with its empty signature) is refused for its algorithm.
  var header = decodeJson(parts[0]);
  if (Object.keys(header).length !== 3 || header.typ !== 'at+jwt') refuse('malformed');
  if (header.alg !== 'ES256') refuse('algorithm');
  if (typeof header.kid !== 'string' || header.kid.length === 0 || header.kid.length > 64) refuse('malformed');
  if (!BASE64URL.test(parts[1]) || !BASE64URL.test(parts[2])) refuse('malformed');
  var claims = decodeJson(parts[1]);
  var signature = Buffer.from(parts[2], 'base64url');
  if (signature.length !== 64) refuse('signature');

  // (njs 0.7 does not take `await` in a call's arguments.)
  var jwk = await keyOf(r, header.kid);
  var key = await publicKeyOf(jwk);
  var signed;
  try {
    signed = await crypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, key, signature, Buffer.from(parts[0] + '.' + parts[1]));
  } catch (_error) {
    // OpenSSL's refusal of a signature out of range (r or s zero, or not below the order)
    signed = false;
  }
  if (signed !== true) refuse('signature');

  if (claims.iss !== issuer) refuse('issuer');
  var aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!aud.some((value) => typeof value === 'string' && audiences.indexOf(value) >= 0)) refuse('audience');
  if (claims.app_id !== appId) refuse('issuer');
  var now = Date.now();
  if (!isSeconds(claims.exp) || claims.exp * 1000 <= now) refuse('expired');
  if (claims.nbf !== undefined && (!isSeconds(claims.nbf) || claims.nbf * 1000 > now)) refuse('not_yet_valid');
  if (!isSeconds(claims.iat) || typeof claims.jti !== 'string' || typeof claims.client_id !== 'string') refuse('malformed');
  if (typeof claims.sub !== 'string' || claims.sub === '') refuse('malformed');
  if (claims.scope !== undefined && typeof claims.scope !== 'string') refuse('malformed');
  if (claims.attestation !== undefined && !(typeof claims.attestation === 'string' && /^[a-z]{1,32}$/.test(claims.attestation)))
    refuse('malformed');

  var anonymous = claims.sub === ANONYMOUS_ID;
  return {
    app_id: appId,
    principal: anonymous ? 'anonymous' : 'admin',
    principal_id: claims.sub,
    auth: 'bearer',
    expires_at: String(claims.exp * 1000),
    scope: !anonymous && typeof claims.scope === 'string' ? claims.scope : '',
    attestation: anonymous && typeof claims.attestation === 'string' ? claims.attestation : '',
  };
}

/** The token of `Authorization: Bearer <token>`; refuses any other credentials. */
function bearerToken(authorization) {
  if (typeof authorization !== 'string' || authorization.trim() === '') {
    throw new Refusal('no_credentials', 'UNAUTHORIZED', 'Authentication is required: Authorization: Bearer <token>.');
  }
  var match = /^\s*(\S+)\s+(\S+)\s*$/.exec(authorization);
  var scheme = match === null ? '' : match[1].toLowerCase();
  if (scheme === 'basic') {
    throw new Refusal(
      'basic',
      'INVALID_TOKEN',
      'This service checks JWT access tokens only: get an anonymous token (POST /api/apps/{appId}/oauth2/token) and send it as Authorization: Bearer <token>.',
    );
  }
  if (scheme !== 'bearer') refuse('malformed');
  return match[2];
}

/** The AppID of an issuer `{base}/api/apps/{appId}`, or undefined. */
function appIdOf(issuer) {
  var match = /^https?:\/\/[^/?#]+(?:\/[^?#]*)?\/api\/apps\/([^/?#]+)$/.exec(issuer);
  if (match === null) return undefined;
  try {
    return decodeURIComponent(match[1]);
  } catch (_error) {
    return undefined;
  }
}

/** A base64url part as a JSON object; refuses anything else. */
function decodeJson(part) {
  var value;
  try {
    value = JSON.parse(Buffer.from(part, 'base64url').toString());
  } catch (_error) {
    refuse('malformed');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) refuse('malformed');
  return value;
}

function isSeconds(value) {
  return typeof value === 'number' && isFinite(value) && Math.floor(value) === value && value >= 0;
}

/** The JWK of `kid`: from the cached JWKS, else from the fresh one; refuses a kid neither has. */
async function keyOf(r, kid) {
  var set = await jwks(r, '/_tessera_jwks');
  var jwk = find(set, kid);
  if (jwk === undefined) {
    set = await jwks(r, '/_tessera_jwks_fresh');
    jwk = find(set, kid);
  }
  if (jwk === undefined) refuse('unknown_key');
  if (
    jwk.kty !== 'EC' ||
    jwk.crv !== 'P-256' ||
    (jwk.alg !== undefined && jwk.alg !== 'ES256') ||
    (jwk.use !== undefined && jwk.use !== 'sig')
  ) {
    refuse('algorithm');
  }
  return jwk;
}

function find(set, kid) {
  for (var i = 0; i < set.keys.length; i++) {
    if (set.keys[i] !== null && typeof set.keys[i] === 'object' && set.keys[i].kid === kid) return set.keys[i];
  }
  return undefined;
}

/** The JWKS that `location` (a subrequest, through nginx's proxy cache) answers. */
async function jwks(r, location) {
  var reply = await r.subrequest(location, { method: 'GET' });
  var set;
  try {
    set = reply.status === 200 ? JSON.parse(reply.responseText) : undefined;
  } catch (_error) {
    set = undefined;
  }
  if (set === undefined || set === null || !Array.isArray(set.keys)) {
    r.warn('tessera-jwt: ' + location + ' answered ' + reply.status + ' without a JWKS');
    throw new Refusal(
      'jwks_unavailable',
      'SERVICE_UNAVAILABLE',
      "Tessera's keys cannot be fetched right now, so the token cannot be checked; try again shortly.",
    );
  }
  return set;
}

/**
 * The WebCrypto key of a P-256 JWK, imported as a SubjectPublicKeyInfo (DER): njs 0.7 imports EC
 * keys from `spki` only, not from `jwk` or `raw`.
 */
async function publicKeyOf(jwk) {
  var x = typeof jwk.x === 'string' && BASE64URL.test(jwk.x) ? Buffer.from(jwk.x, 'base64url') : Buffer.alloc(0);
  var y = typeof jwk.y === 'string' && BASE64URL.test(jwk.y) ? Buffer.from(jwk.y, 'base64url') : Buffer.alloc(0);
  if (x.length !== 32 || y.length !== 32) refuse('unusable_key');
  var spki = Buffer.concat([Buffer.from(P256_SPKI_PREFIX + '04', 'hex'), x, y]);
  try {
    return await crypto.subtle.importKey('spki', spki, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['verify']);
  } catch (_error) {
    // a point not on the curve
    refuse('unusable_key');
  }
}

export default { verify };
