import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { CredentialService } from '../apps/credential-service.js';
import type { PlayIntegrity } from '../attestation/android.js';
import type { AppAttest } from '../attestation/apple.js';
import type { DebugTokens } from '../attestation/debug-tokens.js';
import type { AppEvents } from '../apps/events.js';
import type { AppMembers } from '../apps/members.js';
import type { OwnedApps } from '../apps/owned-apps.js';
import type { AppService } from '../apps/service.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import type { DeveloperAccounts } from '../developers/accounts.js';
import type { DeveloperSessions } from '../developers/sessions.js';
import type { TokenRevoker } from '../tokens/revocation.js';
import type { WebhookService } from '../webhooks/service.js';
import type { PortalCookies } from './cookies.js';
import type { AlertSettings } from '../mail/alerts.js';

/** What the portal's pages use. */
export interface PortalOptions {
  developers: DeveloperAccounts;
  sessions: DeveloperSessions;
  members: AppMembers;
  ownedApps: OwnedApps;
  apps: AppService;
  revoker: TokenRevoker;
  events: AppEvents;
  /** An app's further credentials (its Credentials page). */
  credentials: CredentialService;
  /** An app's attestation debug tokens (its Attestation page). */
  debugTokens: DebugTokens;
  /** Whether an app's platform attestations are set up (its Attestation page). */
  platforms: { playIntegrity: Pick<PlayIntegrity, 'show' | 'set'>; appAttest: Pick<AppAttest, 'show' | 'set'> };
  /** An app's webhooks and their deliveries (its Webhooks page, the owner's). */
  webhooks: WebhookService;
  clock: Clock;
  /** Cookies `Secure` and `__Host-` (the portal is reached over HTTPS). */
  secureCookies: boolean;
  /** PUBLIC_URL, for the commands the new-app page shows; else the address the browser used. */
  publicUrl: string | undefined;
  /** PORTAL_SIGNUP: `open` serves the sign-up page; `invite` (the default) leaves accounts to the operator. */
  signup?: 'open' | 'invite';
  /** The server's logger, for the pages' errors (`5xx`, as the API's are logged); none, nothing is logged. */
  logger?: Logger | undefined;
  /** With mail (`SMTP_URL`): each member's alerts of each app, turned off or on on the app's page; undefined without. */
  alerts?: AlertSettings | undefined;
}

/** What every page file is given. */
export interface PortalContext extends PortalOptions {
  cookies: PortalCookies;
}

/** A route that pages call by themselves, not a person (polling): it uses the session without keeping it alive. */
export interface BackgroundRouteConfig {
  background?: boolean;
}

/** The route parameters of an app's pages. */
export type AppParams = { Params: { appId: string } };

/** A submitted form's fields (`acceptFormBodies` parses forms into `URLSearchParams`): none for any other body. */
export function formOf(request: FastifyRequest): URLSearchParams {
  return request.body instanceof URLSearchParams ? request.body : new URLSearchParams();
}

/** A field of a submitted form. */
export function formField(request: FastifyRequest, name: string): string | undefined {
  return formOf(request).get(name) ?? undefined;
}
