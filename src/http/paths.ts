/**
 * The service's URL patterns, as Fastify routes them (`:appId` is a parameter): what the route
 * plugins (`routes/`), CORS (`cors.ts`) and the server (`server.ts`) share. docs/openapi.json
 * describes them.
 */

/** An app, and the root of every path under it. */
export const APP_PATH = '/api/apps/:appId';
/** Any other path under an app: authenticated, then not found. */
export const UNDER_APP_PATH = '/api/apps/:appId/*';
export const CONFIGURATION_PATH = '/api/apps/:appId/configuration';
export const WHOAMI_PATH = '/api/apps/:appId/whoami';
export const EVENTS_PATH = '/api/apps/:appId/events';
export const EVENT_COUNTS_PATH = '/api/apps/:appId/events/counts';
export const CREDENTIALS_PATH = '/api/apps/:appId/credentials';
export const CREDENTIAL_PATH = '/api/apps/:appId/credentials/:clientId';
export const CREDENTIAL_ROTATION_PATH = '/api/apps/:appId/credentials/:clientId/rotate';
export const CREDENTIAL_PREVIOUS_SECRET_PATH = '/api/apps/:appId/credentials/:clientId/previous-secret';
export const WEBHOOKS_PATH = '/api/apps/:appId/webhooks';
export const WEBHOOK_PATH = '/api/apps/:appId/webhooks/:webhookId';
export const WEBHOOK_SECRET_ROTATION_PATH = '/api/apps/:appId/webhooks/:webhookId/rotate-secret';
export const WEBHOOK_DELIVERIES_PATH = '/api/apps/:appId/webhooks/:webhookId/deliveries';
export const WEBHOOK_DELIVERY_RESEND_PATH = '/api/apps/:appId/webhooks/:webhookId/deliveries/:deliveryId/resend';

/** The proof of work's challenge: open to anyone who names the app (an anonymous token request needs one before it has a token). */
/** The JWKS of JWT access tokens: the service's, and each app's (its metadata's `jwks_uri`). */
export const JWKS_PATH = '/api/jwks.json';
export const APP_JWKS_PATH = '/api/apps/:appId/jwks.json';
/** A Token Status List (`src/jwt/status-lists.ts`, `listUri`). */
export const STATUS_LIST_PATH = '/api/status-lists/:list';
export const ATTESTATION_CHALLENGE_PATH = '/api/apps/:appId/attestation/challenge';
export const DEBUG_TOKENS_PATH = '/api/apps/:appId/attestation/debug-tokens';
export const DEBUG_TOKEN_PATH = '/api/apps/:appId/attestation/debug-tokens/:debugTokenId';
export const PLAY_INTEGRITY_PATH = '/api/apps/:appId/attestation/android';
export const APP_ATTEST_PATH = '/api/apps/:appId/attestation/apple';

export const APP_TOKEN_PATH = '/api/apps/:appId/oauth2/token';
/** Where deployed SDK clients ask for tokens: the app comes from `X-Kii-AppID`. */
export const SDK_TOKEN_PATH = '/api/oauth2/token';
export const REVOKE_PATH = '/api/apps/:appId/oauth2/revoke';
export const INTROSPECT_PATH = '/api/apps/:appId/oauth2/introspect';
export const APP_TOKENS_PATH = '/api/apps/:appId/tokens';
/** RFC 8414 §3: the well-known path, put before the issuer's path. */
export const METADATA_PREFIX = '/.well-known/oauth-authorization-server';

/** Forward authentication for reverse proxies; Envoy puts the original path after it. */
export const FORWARD_AUTH_PATH = '/api/forward-auth';

export const HEALTH_PATH = '/healthz';
export const READINESS_PATH = '/readyz';
export const OPENAPI_PATH = '/openapi.json';
export const CLIENT_SCRIPT_PATH = '/tessera-client.js';
/** The developer portal: its pages are the service's own, for its own origin only. */
export const PORTAL_PREFIX = '/portal';
