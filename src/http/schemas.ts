import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';
import { ERROR_STATUS, type ErrorCode } from 'tessera-tokens/internal/errors.js';
import { ATTESTATION_PROVIDERS, type AttestationProvider } from 'tessera-tokens/internal/principal.js';
import {
  ACCESS_TOKEN_FORMATS,
  ATTESTATION_MODES,
  POW_ALGORITHMS,
  type AccessTokenFormat,
  type AttestationMode,
  type PowAlgorithm,
} from 'tessera-tokens/internal/apps/app.js';
import { EVENT_TYPES, type EventType as EventTypeName } from '../events/event.js';

/**
 * The shapes the API's routes share (docs/openapi.json's components/schemas), each with its `$id`:
 * the server adds them all (`app.addSchema`), the routes refer to them with `Ref`, Fastify
 * serializes answers with them, and `@fastify/swagger` writes them into the OpenAPI document under
 * their `$id`. A route's own parameters and bodies are in its `*.schema.ts`, beside it.
 */

/** `schema` with its `$id`, by which routes refer to it (`Ref`) and the OpenAPI document names it. */
function withId<T extends TSchema>(id: string, schema: T): T & { $id: string } {
  return Object.assign(schema, { $id: id });
}

/** A reference to a shared schema, typed as the schema it refers to. */
export function Ref<T extends TSchema & { $id: string }>(schema: T): TUnsafe<Static<T>> {
  return Type.Unsafe<Static<T>>({ $ref: `${schema.$id}#` });
}

export const TokenResponse = withId(
  'TokenResponse',
  Type.Object(
    {
      id: Type.String({ description: "The app's admin id for an admin token; `ANONYMOUS` for an anonymous token." }),
      access_token: Type.String({ maxLength: 512, pattern: '^[A-Za-z0-9_-]+$', description: 'Opaque, URL-safe, 256 bits of entropy.' }),
      expires_in: Type.Integer({
        description: 'Seconds from the request to the expiry, rounded down; 2147483646 for a token that never expires.',
      }),
      token_type: Type.Literal('bearer'),
      scope: Type.Optional(
        Type.String({
          description:
            'Only for a token issued from a credential (RFC 6749 §5.1): its scopes, separated by spaces, sorted. Absent otherwise.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
);

/** The provider of the attestation an anonymous token was issued with. */
const ATTESTATION_PROVIDER = Type.Unsafe<AttestationProvider>({
  type: 'string',
  enum: [...ATTESTATION_PROVIDERS],
  description:
    "Only for an anonymous token issued with an attestation (`X-Tessera-Attestation`): its provider. `pow` is a proof of work, `apple` App Attest, `android` Play Integrity, `debug` a debug token of the app's developers.",
});

export const Whoami = withId(
  'Whoami',
  Type.Object(
    {
      appId: Type.String(),
      principal: Type.Unsafe<'anonymous' | 'admin'>({ type: 'string', enum: ['anonymous', 'admin'] }),
      id: Type.String({ description: "`ANONYMOUS`, or the app's admin id." }),
      auth: Type.Unsafe<'basic' | 'bearer'>({ type: 'string', enum: ['basic', 'bearer'] }),
      expiresAt: Type.Unsafe<number | null>({
        type: ['integer', 'null'],
        description: 'When the bearer token expires (UNIX ms); null for Basic or a token that never expires.',
      }),
      scope: Type.Optional(
        Type.String({
          description:
            'Only for an admin token with scopes (issued from a credential, or asked for with `scope`): its scopes, separated by spaces.',
        }),
      ),
      clientId: Type.Optional(Type.String({ description: "Only for an admin token issued from a credential: the credential's ClientID." })),
      attestation: Type.Optional(ATTESTATION_PROVIDER),
    },
    { additionalProperties: false },
  ),
);

export const Introspection = withId(
  'Introspection',
  Type.Object(
    {
      active: Type.Boolean(),
      token_type: Type.Optional(Type.Literal('bearer')),
      principal: Type.Optional(Type.Unsafe<'admin' | 'anonymous'>({ type: 'string', enum: ['admin', 'anonymous'] })),
      id: Type.Optional(Type.String({ description: "`ANONYMOUS`, or the app's admin id." })),
      sub: Type.Optional(Type.String({ description: 'The same as `id`.' })),
      client_id: Type.Optional(
        Type.String({
          description:
            "For an admin token, the ClientID it was issued to: the app's own, or the credential's; the AppID for an anonymous token.",
        }),
      ),
      scope: Type.Optional(
        Type.String({ description: 'Only for an admin token with scopes: its scopes, separated by spaces (RFC 7662 §2.2).' }),
      ),
      app_id: Type.Optional(Type.String()),
      iat: Type.Optional(Type.Integer({ description: 'When the token was issued: UNIX seconds, rounded down.' })),
      exp: Type.Optional(
        Type.Integer({ description: 'When the token expires: UNIX seconds, rounded down. Absent for a token that never expires.' }),
      ),
      attestation: Type.Optional(ATTESTATION_PROVIDER),
    },
    {
      additionalProperties: false,
      description:
        'An inactive token gets only `{"active": false}`; an active one every field, `exp` only if it expires, `scope` only if it has scopes.',
    },
  ),
);

export const RevokedTokens = withId(
  'RevokedTokens',
  Type.Object(
    {
      appId: Type.String(),
      kind: Type.Unsafe<'admin' | 'anonymous' | 'all'>({ type: 'string', enum: ['admin', 'anonymous', 'all'] }),
      revoked: Type.Integer({
        minimum: 0,
        description:
          'How many stored tokens were deleted (admin tokens, and anonymous tokens issued before they were self-verifying), including expired ones not yet removed by housekeeping. Self-verifying anonymous tokens are not stored and not counted: the cut-off ends them.',
      }),
      anonymousCutoff: Type.Optional(
        Type.String({
          format: 'date-time',
          description:
            'With `anonymous` and `all`: every anonymous token of the app issued up to this instant is refused from now on. Absent for `admin`.',
        }),
      ),
      message: Type.String({
        description:
          'What happened, in words, since `revoked` alone (0 for anonymous tokens) reads as if nothing had: `Every admin token of app APP_ID is refused from now on (2 revoked).`, `Every anonymous token of app APP_ID issued up to 2026-01-31T12:00:00.000Z is refused from now on.`, or for `all` both together. For people; programs read `revoked` and `anonymousCutoff`.',
      }),
    },
    { additionalProperties: false },
  ),
);

export const AppConfiguration = withId(
  'AppConfiguration',
  Type.Object(
    {
      adminTokenMaxLifetimeSeconds: Type.Unsafe<number | null>({
        type: ['integer', 'null'],
        minimum: 1,
        maximum: 2147483646,
        description: 'Longest lifetime of an admin token, in seconds; null: no maximum.',
      }),
      anonymousTokenMaxLifetimeSeconds: Type.Unsafe<number | null>({
        type: ['integer', 'null'],
        minimum: 1,
        maximum: 2147483646,
        description: 'Longest lifetime of an anonymous token, in seconds; null: no maximum.',
      }),
      requireAppKey: Type.Boolean({
        description: "Whether an anonymous token request must carry the app's exact AppKey (false: any non-empty `client_secret`).",
      }),
      allowedOrigins: Type.Array(Type.String({ maxLength: 300 }), {
        maxItems: 100,
        description:
          'Origins whose web pages may call the service (CORS), canonical: `scheme://host[:port]` (http or https, lower case, no default port), or `https://*.example.com` for every subdomain of a domain at any depth. At most 100.',
      }),
      anonymousAttestation: Type.Unsafe<AttestationMode>({
        type: 'string',
        enum: [...ATTESTATION_MODES],
        description:
          "Whether anonymous token requests must prove they come from the genuine app (`X-Tessera-Attestation`): `off`, the seed's behaviour; `monitor`, served as without and counted by outcome (`/events/counts`, reasons `attested_<provider>`, `attestation_missing`, `attestation_invalid`, `attestation_replayed`); `enforce`, refused with `401 ATTESTATION_REQUIRED` or `ATTESTATION_INVALID` without a valid one.",
      }),
      basicAnonymous: Type.Boolean({
        description:
          'Whether Basic anonymous access (`Authorization: Basic base64(AppID:anything)`, no token) is accepted; false: `401 BASIC_ANONYMOUS_DISABLED`.',
      }),
      powAlgorithm: Type.Unsafe<PowAlgorithm>({
        type: 'string',
        enum: [...POW_ALGORITHMS],
        description: "The proof of work's key derivation (ALTCHA's `algorithm`).",
      }),
      powCost: Type.Integer({
        minimum: 1,
        maximum: 10_000,
        description: "ALTCHA's `cost` of one attempt: rounds of the hash, or PBKDF2's iterations.",
      }),
      powMaxAttempts: Type.Integer({
        minimum: 100,
        maximum: 10_000_000,
        description: 'The most attempts a challenge needs at the base rate: each needs from half of them to all of them.',
      }),
      powRisesAbovePerMinute: Type.Unsafe<number | null>({
        type: ['integer', 'null'],
        minimum: 1,
        maximum: 1_000_000,
        description:
          'Anonymous token requests per minute (on one instance) from which a challenge needs twice the attempts, and twice again at each doubling of the rate, up to 64 times; null: never.',
      }),
      accessTokenFormat: Type.Unsafe<AccessTokenFormat>({
        type: 'string',
        enum: [...ACCESS_TOKEN_FORMATS],
        description:
          "What the app's tokens are: `opaque`, the seed's; `jwt`, RFC 9068 access tokens signed with the keys of `{issuer}/jwks.json`, which other services check offline, revoked through a Token Status List (`status` claim). A JWT lives at most 24 hours.",
      }),
      accessTokenAudience: Type.Unsafe<string[] | null>({
        type: ['array', 'null'],
        items: { type: 'string', minLength: 1, maxLength: 100 },
        minItems: 1,
        maxItems: 5,
        description: "A JWT access token's `aud`; null: `tessera:app:{appId}`.",
      }),
    },
    { additionalProperties: false },
  ),
);

export const AppConfigurationPatch = withId(
  'AppConfigurationPatch',
  Type.Object(
    {
      adminTokenMaxLifetimeSeconds: Type.Optional(
        Type.Unsafe<number | null>({ type: ['integer', 'null'], minimum: 1, maximum: 2147483646, description: 'null: no maximum.' }),
      ),
      anonymousTokenMaxLifetimeSeconds: Type.Optional(
        Type.Unsafe<number | null>({ type: ['integer', 'null'], minimum: 1, maximum: 2147483646, description: 'null: no maximum.' }),
      ),
      requireAppKey: Type.Optional(
        Type.Unsafe<boolean | null>({ type: ['boolean', 'null'], description: 'null: back to the default, false.' }),
      ),
      allowedOrigins: Type.Optional(
        Type.Unsafe<string[] | null>({
          type: ['array', 'null'],
          maxItems: 100,
          items: { type: 'string', maxLength: 300 },
          description:
            'Replaces the list. Each entry is made canonical (`HTTPS://App.Example.com:443/` is `https://app.example.com`), duplicates dropped; anything but an origin is `400 invalid_request`. null or []: no browser origin.',
        }),
      ),
      anonymousAttestation: Type.Optional(
        Type.Unsafe<AttestationMode | null>({
          type: ['string', 'null'],
          enum: [...ATTESTATION_MODES, null],
          description:
            'null: back to `off`. `monitor` and `enforce` wait until every instance runs 0.3.0 or later (`409 CONFLICT` meanwhile, during a rolling upgrade). Takes effect on every instance within a second.',
        }),
      ),
      basicAnonymous: Type.Optional(
        Type.Unsafe<boolean | null>({ type: ['boolean', 'null'], description: 'null: back to true. false waits as `enforce` does.' }),
      ),
      powAlgorithm: Type.Optional(
        Type.Unsafe<PowAlgorithm | null>({
          type: ['string', 'null'],
          enum: [...POW_ALGORITHMS, null],
          description: 'null: back to SHA-256.',
        }),
      ),
      powCost: Type.Optional(
        Type.Unsafe<number | null>({ type: ['integer', 'null'], minimum: 1, maximum: 10_000, description: 'null: back to 1.' }),
      ),
      powMaxAttempts: Type.Optional(
        Type.Unsafe<number | null>({ type: ['integer', 'null'], minimum: 100, maximum: 10_000_000, description: 'null: back to 50000.' }),
      ),
      powRisesAbovePerMinute: Type.Optional(
        Type.Unsafe<number | null>({ type: ['integer', 'null'], minimum: 1, maximum: 1_000_000, description: 'null: never.' }),
      ),
      accessTokenFormat: Type.Optional(
        Type.Unsafe<AccessTokenFormat | null>({
          type: ['string', 'null'],
          enum: [...ACCESS_TOKEN_FORMATS, null],
          description:
            'null: back to `opaque`. `jwt` waits until every instance runs 0.4.0 or later (`409 CONFLICT` meanwhile). Tokens issued before keep their format.',
        }),
      ),
      accessTokenAudience: Type.Optional(
        Type.Unsafe<string[] | null>({
          type: ['array', 'null'],
          items: { type: 'string', minLength: 1, maxLength: 100 },
          maxItems: 5,
          description: 'Replaces the list; null: back to `tessera:app:{appId}`.',
        }),
      ),
    },
    {
      additionalProperties: false,
      minProperties: 1,
      'x-field-name': 'configuration field',
      description: 'At least one field; an unknown field is an error.',
    },
  ),
);

export const App = withId(
  'App',
  Type.Object(
    {
      appId: Type.String(),
      name: Type.String(),
      appKey: Type.String({ description: 'Public: embedded in client apps.' }),
      clientId: Type.String(),
      adminId: Type.String(),
      createdAt: Type.String({ format: 'date-time' }),
      configuration: Ref(AppConfiguration),
      previousSecretValidUntil: Type.Unsafe<string | null>({
        type: ['string', 'null'],
        format: 'date-time',
        description:
          'Until when the ClientSecret that the last rotation replaced works (or worked): `tessera apps rotate-secret --grace SECONDS` keeps it working that long. Null when that rotation ended it at once, or there was none. Never a secret.',
      }),
    },
    { additionalProperties: false },
  ),
);

export const Scope = withId(
  'Scope',
  Type.String({
    maxLength: 64,
    pattern: '^[a-z][a-z0-9_.:-]*$',
    description:
      "A built-in scope (`app:read`, `configuration:read`, `configuration:write`, `events:read`, `tokens:introspect`, `tokens:revoke`, `credentials:manage`: each allows one admin feature of Tessera), or one of the app's own, which Tessera carries without meaning. A name in a built-in namespace (`app:`, `configuration:`, `events:`, `tokens:`, `credentials:`) must be a built-in scope.",
  }),
);

export const Credential = withId(
  'Credential',
  Type.Object(
    {
      clientId: Type.String({
        pattern: '^tcl_[0-9a-f]{24}$',
        description: "The credential's ClientID: `tcl_` and 24 hex characters. Not a secret.",
      }),
      name: Type.String({ minLength: 1, maxLength: 100 }),
      scopes: Type.Array(Ref(Scope), { minItems: 1, maxItems: 32, description: 'What its admin tokens may do; sorted, no repeats.' }),
      expiresAt: Type.Unsafe<string | null>({
        type: ['string', 'null'],
        format: 'date-time',
        description: 'From this instant on, no token is issued from it, and no token issued from it lives past it. Null: never.',
      }),
      allowFrom: Type.Array(Type.String(), {
        maxItems: 32,
        description:
          'The client addresses that may use it, as canonical CIDRs (`203.0.113.0/24`, `2001:db8::/32`, `192.0.2.7/32`); empty: any address.',
      }),
      createdAt: Type.String({ format: 'date-time' }),
      createdBy: Type.Unsafe<'operator' | 'developer' | 'admin'>({
        type: 'string',
        enum: ['operator', 'developer', 'admin'],
        description:
          '`operator`: the CLI; `developer`: a developer of the app (`createdByDeveloperId`); `admin`: an admin token (`createdByClientId`).',
      }),
      createdByDeveloperId: Type.Optional(Type.String({ description: 'Only when a developer made it.' })),
      createdByClientId: Type.Optional(
        Type.String({
          description: "Only when an admin token made it: the ClientID that token was issued to, the app's own or a credential's.",
        }),
      ),
      lastUsedAt: Type.Unsafe<string | null>({
        type: ['string', 'null'],
        format: 'date-time',
        description:
          'When it last authenticated (a token request, or client authentication on revocation or introspection); written at most once a minute. Null: never.',
      }),
      previousSecretValidUntil: Type.Unsafe<string | null>({
        type: ['string', 'null'],
        format: 'date-time',
        description:
          'Until when the ClientSecret the last rotation replaced works (or worked). Null when that rotation ended it at once, or there was none.',
      }),
      accessTokenFormat: Type.Unsafe<AccessTokenFormat | null>({
        type: ['string', 'null'],
        enum: [...ACCESS_TOKEN_FORMATS, null],
        description: "The format of its admin tokens: `opaque` or `jwt`; null: the app's (`accessTokenFormat` of its configuration).",
      }),
    },
    { additionalProperties: false, description: "One of an app's further credentials, besides its own ClientID. Never its secret." },
  ),
);

export const NewCredential = withId(
  'NewCredential',
  Type.Object(
    {
      name: Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'For people: what uses it. 1 to 100 characters after trimming, no control characters.',
      }),
      scopes: Type.Array(Ref(Scope), {
        minItems: 1,
        maxItems: 32,
        description:
          '1 to 32 scopes. No one grants more than it has: an admin token with scopes may give only its own (`403 INSUFFICIENT_SCOPE` otherwise).',
      }),
      expiresAt: Type.Optional(
        Type.Unsafe<string | null>({
          type: ['string', 'null'],
          format: 'date-time',
          description: 'RFC 3339 (`2027-01-31T00:00:00Z`), in the future. Absent or null: it never expires.',
        }),
      ),
      allowFrom: Type.Optional(
        Type.Unsafe<string[] | null>({
          type: ['array', 'null'],
          items: { type: 'string', maxLength: 50 },
          maxItems: 32,
          description:
            'IPv4 or IPv6 CIDRs; a bare address is a /32 or /128. An entry with bits set past its prefix (`10.0.0.1/8`) is refused. Checked against the client address the server sees (behind `TRUSTED_PROXIES`, from `X-Forwarded-For`). Absent, null or empty: any address.',
        }),
      ),
      accessTokenFormat: Type.Optional(
        Type.Unsafe<AccessTokenFormat | null>({
          type: ['string', 'null'],
          enum: [...ACCESS_TOKEN_FORMATS, null],
          description:
            "The format of its admin tokens, whatever the app's: `opaque` or `jwt` (which waits until every instance runs 0.4.0 or later). Absent or null: the app's.",
        }),
      ),
    },
    {
      additionalProperties: true,
      description: "Other fields are ignored. A problem is `400 invalid_request` whose message starts with the field's name.",
    },
  ),
);

export const CreatedCredential = withId(
  'CreatedCredential',
  Type.Unsafe<Static<typeof Credential> & { clientSecret: string }>({
    description: 'The new credential, with its ClientSecret, shown this once.',
    allOf: [
      { $ref: 'Credential#' },
      {
        type: 'object',
        required: ['clientSecret'],
        properties: {
          clientSecret: {
            type: 'string',
            pattern: '^tessera_[0-9A-Za-z]{49}$',
            description:
              'The new ClientSecret, shown this once: `tessera_`, 43 random base62 characters and a 6-character CRC-32 checksum of them (docs/security.md). Only its HMAC-SHA256 is stored.',
          },
        },
      },
    ],
  }),
);

export const RotatedCredential = withId(
  'RotatedCredential',
  Type.Object(
    {
      clientId: Type.String({
        pattern: '^tcl_[0-9a-f]{24}$',
        description: "The credential's ClientID: `tcl_` and 24 hex characters. Not a secret.",
      }),
      clientSecret: Type.String({
        pattern: '^tessera_[0-9A-Za-z]{49}$',
        description:
          'The new ClientSecret, shown this once: `tessera_`, 43 random base62 characters and a 6-character CRC-32 checksum of them (docs/security.md). Only its HMAC-SHA256 is stored.',
      }),
      previousSecretValidUntil: Type.Unsafe<string | null>({
        type: ['string', 'null'],
        format: 'date-time',
        description: 'Until when the replaced ClientSecret works; null: it stopped at once.',
      }),
    },
    { additionalProperties: false },
  ),
);

export const RevokedCredential = withId(
  'RevokedCredential',
  Type.Object(
    {
      clientId: Type.String({
        pattern: '^tcl_[0-9a-f]{24}$',
        description: "The credential's ClientID: `tcl_` and 24 hex characters. Not a secret.",
      }),
      tokensRevoked: Type.Integer({
        minimum: 0,
        description: 'The admin tokens issued from it, revoked with it (expired ones not yet removed by housekeeping included).',
      }),
      credentialsRevoked: Type.Array(
        Type.Object(
          { clientId: Type.String({ pattern: '^tcl_[0-9a-f]{24}$' }), name: Type.String(), tokensRevoked: Type.Integer({ minimum: 0 }) },
          { additionalProperties: false },
        ),
        {
          description:
            "The credentials this credential's admin tokens made (and those theirs made, and so on), revoked with it: a credential never outlives the one that made it. Each with its own tokens revoked.",
        },
      ),
    },
    { additionalProperties: false },
  ),
);

export const EventType = withId('EventType', Type.Unsafe<EventTypeName>({ type: 'string', enum: [...EVENT_TYPES] }));

export const AuditEvent = withId(
  'AuditEvent',
  Type.Object(
    {
      id: Type.String({ description: 'Increases with every event recorded.' }),
      type: Ref(EventType),
      at: Type.String({ format: 'date-time' }),
      appId: Type.String(),
      principal: Type.Unsafe<'admin' | 'anonymous' | 'operator' | 'developer' | null>({
        type: ['string', 'null'],
        enum: ['admin', 'anonymous', 'operator', 'developer', null],
        description:
          'Who caused it: the principal of the request, `operator` (the CLI), `developer` (a developer signed in to the portal; which one: `details.byDeveloperId`), or null when nobody is known: a refused request (`token.refused`, `credential.refused`), whose client address is all that is known of its sender (what it asked to be is `attempted`).',
      }),
      attempted: Type.Unsafe<'admin' | 'anonymous' | null>({
        type: ['string', 'null'],
        enum: ['admin', 'anonymous', null],
        description:
          'What a refused request (`token.refused` with `reason` `invalid_client`) asked to be: `admin` (a wrong ClientID or ClientSecret) or `anonymous` (a wrong AppKey). Never who sent it: `principal` is null. Null for a bad token and for every other event.',
      }),
      clientAddress: Type.Unsafe<string | null>({
        type: ['string', 'null'],
        description: 'The TCP peer (for forward authentication, the last `X-Forwarded-For` entry when sent); null for the CLI.',
      }),
      details: Type.Unsafe<Record<string, unknown>>({
        type: 'object',
        // A list of strings, or one value: under one list of types, fast-json-stringify would write a list as a string.
        additionalProperties: { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: ['string', 'number', 'boolean', 'null'] }] },
        description:
          "By type. `token.issued`: `expiresAt` (UNIX ms, or null for never); for an admin token also `secret`, `current` or `previous`: the ClientSecret it was issued with (the previous one works for the grace period of a rotation). For an admin token with scopes also `clientId` (the credential's ClientID) and `scopes` (a list). `token.revoked`: `scope` (`token`: one token, by `/oauth2/revoke`; `app`: all tokens of the app, or of one kind, by `DELETE /tokens` or the CLI's `tokens revoke-all` and `apps rotate-secret --revoke-admin-tokens`), `kind` (`admin` or `anonymous`; for scope `app` also `all`), `count` (the stored tokens removed: anonymous tokens are not stored, so a revoke-all of them counts 0), and for scope `app` with `anonymous` or `all`, `anonymousCutoff` (UNIX ms): every anonymous token of the app issued up to then is refused. `token.refused` (principal null): `reason`, `invalid_client` (a failed token request or client authentication; `attempted`: the kind asked for; `clientId` when a credential's ClientID was sent with a wrong secret) or `invalid_token` (a bad bearer token; for a JWT access token also `problem`: `algorithm`, `malformed`, `other_app`, `unknown_key`, `signature`, `expired` or `revoked`). `app.secret_rotated`: `adminTokensRevoked`, `previousSecretValidUntil` (UNIX ms until which the replaced secret works, or null: it stopped at once). `app.configuration_changed`: the fields changed, with their new values. `app.secret_exposed` (principal `admin`): the ClientSecret was sent from a browser (an admin-token request with `Origin`, refused): `secret` (which of the secrets, `current` or `previous`), `origin` (the page's origin, or null when opaque), and `clientId` when it was a credential's; rotate the secret. `app.owner_changed`: `ownerId`, `previousOwnerId` (developer ids; null: the operator's). `app.collaborator_invited`: `invitationId`, `email`, `expiresAt` (never the link's token). `app.collaborator_added`: `developerId`, `invitationId`, `role`. `app.collaborator_removed`: `developerId`, `role`. `app.invitation_withdrawn`: `invitationId`, `email`. `credential.created`: `clientId`, `name`, `scopes`, `expiresAt` (UNIX ms, or null), `allowFrom`. `credential.rotated`: `clientId`, `name`, `previousSecretValidUntil` (UNIX ms, or null: the old secret stopped at once). `credential.revoked`: `clientId`, `name`, `tokensRevoked`; for a credential revoked with the one whose admin token made it, also `madeBy` (that one's ClientID) and `revokedWith` (the ClientID whose revocation was asked for). `app.previous_secret_ended`: `previousSecretValidUntil` (UNIX ms: the end the previous ClientSecret had, cut short). `credential.previous_secret_ended`: `clientId`, `name`, `previousSecretValidUntil`. `credential.refused` (principal null): a credential's right ClientSecret refused, `reason` `credential_expired` or `address_not_allowed`, `clientId`, `name`; kept with the audit events, since only a holder of the secret can cause it. `app.refusal_burst` (principal null): token requests refused for their keys reached 10 in a minute (at most one such event per app and hour): `minute` (ISO 8601), `refused`, `throttled`. `webhook.created`: `webhookId`, `url`, `eventTypes`. `webhook.deleted`: `webhookId`, `url`. `webhook.secret_rotated`: `webhookId`, `url`, `previousSecretUntil` (UNIX ms). By a developer, also `byDeveloperId`; by an admin token issued from a credential, `byClientId` (that credential's ClientID). Never a secret.",
      }),
    },
    { additionalProperties: false },
  ),
);

export const EventPage = withId(
  'EventPage',
  Type.Object(
    {
      events: Type.Array(Ref(AuditEvent)),
      nextCursor: Type.Unsafe<string | null>({
        type: ['string', 'null'],
        description:
          'Pass as `cursor` for the next (older) page; null when there is none. Also set when a filtered read stopped at the 20,000 events it may examine: the page may then be short, or empty.',
      }),
    },
    { additionalProperties: false },
  ),
);

export const EventCount = withId(
  'EventCount',
  Type.Object(
    {
      type: Ref(EventType),
      principal: Type.Unsafe<'admin' | 'anonymous' | 'operator' | 'developer' | null>({
        type: ['string', 'null'],
        enum: ['admin', 'anonymous', 'operator', 'developer', null],
        description: 'As in an event: who caused it; null for a refused request (`token.refused`, `token.throttled`).',
      }),
      attempted: Type.Unsafe<'admin' | 'anonymous' | null>({
        type: ['string', 'null'],
        enum: ['admin', 'anonymous', null],
        description:
          'As in an event: what a refused request asked to be (`token.refused` with `invalid_client`, `token.throttled`: `admin`); null otherwise.',
      }),
      reason: Type.Unsafe<string | null>({
        type: ['string', 'null'],
        description: "A refusal's `reason` (`invalid_client`, `invalid_token`); null for other types.",
      }),
      count: Type.Integer({ minimum: 1 }),
    },
    { additionalProperties: false },
  ),
);

export const EventCounts = withId(
  'EventCounts',
  Type.Object(
    {
      appId: Type.String(),
      per: Type.Unsafe<'minute' | 'hour' | 'day'>({ type: 'string', enum: ['minute', 'hour', 'day'] }),
      since: Type.String({ format: 'date-time', description: 'The start of the first bucket asked for.' }),
      until: Type.String({ format: 'date-time', description: 'Exclusive.' }),
      totals: Type.Array(Ref(EventCount), {
        description: 'Per kind of event (type, principal or attempted, reason) over the whole span, the most frequent first.',
      }),
      buckets: Type.Array(
        Type.Object({ start: Type.String({ format: 'date-time' }), counts: Type.Array(Ref(EventCount)) }, { additionalProperties: false }),
        { description: 'The buckets that have counts, oldest first; a bucket with none is left out.' },
      ),
    },
    { additionalProperties: false },
  ),
);

/** The developer portal's own codes (`src/portal/`), which the API never answers with. */
const PORTAL_CODES: ReadonlySet<string> = new Set(['INVALID_CREDENTIALS', 'APP_LIMIT_REACHED', 'DEVELOPER_NOT_FOUND', 'INVALID_LINK']);

/** A code of the contract's errors (`src/errors.ts`) that the API answers with. */
function errorCode(description: string) {
  const codes = (Object.keys(ERROR_STATUS) as ErrorCode[]).filter((code) => !PORTAL_CODES.has(code));
  return Type.Unsafe<ErrorCode>({ type: 'string', enum: codes, description });
}

export const ErrorBody = withId(
  'Error',
  Type.Object(
    {
      errorCode: errorCode('What deployed SDK clients read.'),
      error: errorCode('RFC 6749 §5.2; the same value as errorCode.'),
      error_description: Type.String({ description: 'Human-readable; never contains a secret, a token or a % character.' }),
      message: Type.String({ description: 'The same text as error_description.' }),
    },
    { additionalProperties: false },
  ),
);

export const AuthorizationServerMetadata = withId(
  'AuthorizationServerMetadata',
  Type.Object(
    {
      issuer: Type.String({ format: 'uri' }),
      token_endpoint: Type.String({ format: 'uri' }),
      revocation_endpoint: Type.String({ format: 'uri' }),
      introspection_endpoint: Type.String({ format: 'uri' }),
      jwks_uri: Type.String({
        format: 'uri',
        description: 'The keys of JWT access tokens (RFC 7517), for the apps whose `accessTokenFormat` is `jwt`.',
      }),
      grant_types_supported: Type.Unsafe<string[]>({ type: 'array', items: { const: 'client_credentials' } }),
      response_types_supported: Type.Array(Type.Unknown(), {
        maxItems: 0,
        description: 'Required by RFC 8414; empty, as there is no authorization endpoint.',
      }),
      scopes_supported: Type.Array(Ref(Scope), { description: "The built-in scopes (an app's own scopes are not listed)." }),
      token_endpoint_auth_methods_supported: Type.Array(Type.String()),
      revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
      introspection_endpoint_auth_methods_supported: Type.Array(Type.String()),
    },
    {
      description:
        'RFC 8414 metadata of one app. Each app is an issuer of its own, `{base}/api/apps/{appId}`, where `{base}` is `PUBLIC_URL`.',
      additionalProperties: false,
    },
  ),
);

/** Every shared schema, for `app.addSchema`. */
export const SHARED_SCHEMAS = [
  TokenResponse,
  Whoami,
  Introspection,
  RevokedTokens,
  AppConfiguration,
  AppConfigurationPatch,
  App,
  Scope,
  Credential,
  NewCredential,
  CreatedCredential,
  RotatedCredential,
  RevokedCredential,
  EventType,
  AuditEvent,
  EventPage,
  EventCount,
  EventCounts,
  ErrorBody,
  AuthorizationServerMetadata,
];

/** AppIDs are URL-safe, at most 64 characters (`apps/access-keys.ts`); a path parameter of any other form names no app. */
export const AppId = Type.String({ description: "The app's AppID.", pattern: '^[A-Za-z0-9_-]{1,64}$' });

/** The parameters of a path under an app. */
export const AppParams = Type.Object({ appId: AppId });

/**
 * A successful answer: `schema` (with which Fastify serializes it), what it means and its headers
 * (besides `X-Request-Id`, which the document adds to every answer).
 */
export function answer<T extends TSchema>(schema: T, description: string, headers?: Record<string, object>): TUnsafe<Frozen<Static<T>>> {
  return Type.Unsafe<Frozen<Static<T>>>({ ...schema, description, ...(headers === undefined ? {} : { headers }) });
}

/** `T` with every array and object in it read-only: what a route may answer with (the services answer read-only lists). */
type Frozen<T> = T extends readonly (infer U)[] ? readonly Frozen<U>[] : T extends object ? { readonly [K in keyof T]: Frozen<T[K]> } : T;

/**
 * An error answer of a route, for the document (a schema's `errors`): what causes it, with its
 * headers. Fastify serializes none of them: every error body is written by `src/http/errors.ts`.
 */
export function problem(description: string, headers?: Record<string, object>) {
  return { description, ...(headers === undefined ? {} : { headers }), content: { 'application/json': { schema: Ref(ErrorBody) } } };
}

export const UNAVAILABLE = problem('The database cannot be reached right now (PostgreSQL). Code: SERVICE_UNAVAILABLE.', {
  'Retry-After': { type: 'integer' },
});

export const APP_NOT_FOUND = problem('No app has this AppID. Possible codes: APP_NOT_FOUND.');

export const UNAUTHENTICATED = problem(
  'No credentials, another scheme, a Basic header that does not name this app, or an unknown, malformed, expired or revoked token, or a token of another app. Possible codes: UNAUTHORIZED, INVALID_TOKEN.',
  {
    'WWW-Authenticate': {
      description: '`Bearer error="invalid_token"` for INVALID_TOKEN; `Basic realm="tessera", Bearer realm="tessera"` for UNAUTHORIZED.',
      type: 'string',
    },
  },
);

/** The headers of an answer that must not be cached (RFC 6749 §5.1: tokens, secrets). */
export const NO_STORE = {
  'Cache-Control': { type: 'string', const: 'no-store' },
  Pragma: { type: 'string', const: 'no-cache' },
};

/** The challenge of an admin token whose scopes lack the feature's (`src/http/errors.ts`). */
export const INSUFFICIENT_SCOPE_CHALLENGE = {
  'WWW-Authenticate': {
    description:
      'For INSUFFICIENT_SCOPE: `Bearer error="insufficient_scope", scope="SCOPE"` (RFC 6750 §3.1), SCOPE being the scope the feature needs.',
    type: 'string',
  },
};

/** The `403` of an admin feature that needs `scope`. */
export function adminFeature(scope: string) {
  return problem(
    `Not an admin token (ADMIN_REQUIRED), or an admin token with scopes (issued from a credential, or asked for with \`scope\`) that do not include \`${scope}\` (INSUFFICIENT_SCOPE). Possible codes: ADMIN_REQUIRED, INSUFFICIENT_SCOPE.`,
    INSUFFICIENT_SCOPE_CHALLENGE,
  );
}

/** The `405` of the methods a path does not allow. */
export function methodNotAllowed(allow: string, description = 'Any other method. Possible codes: METHOD_NOT_ALLOWED.') {
  return problem(description, { Allow: { type: 'string', const: allow } });
}
