/**
 * One-time links (docs/portal.md): what an operator or an app's owner copies and passes on by hand
 * (there is no mail server). Each holds a secret token (`secret-token.ts`), works once, and expires.
 * - `set_password`: a new account's first password (`tessera developers create` without one);
 * - `reset_password`: a forgotten password (`tessera developers reset-link`);
 * - `invitation`: to become a collaborator on an app, for one email address.
 * Only the newest link of a kind works: a new password link for a developer replaces the older
 * ones, and a new invitation to an app for an address replaces the older one.
 */
export type LinkPurpose = 'set_password' | 'reset_password' | 'invitation';

const HOUR_MS = 3_600_000;

/**
 * Long enough for a link passed on by hand (chat, a ticket) to be used, short enough that one
 * forgotten in a mailbox soon stops working: a week for a new account or an invitation, as GitHub's
 * invitations; a day for a reset, which is asked for when it is needed.
 */
export const LINK_LIFETIME_MS: Readonly<Record<LinkPurpose, number>> = Object.freeze({
  set_password: 7 * 24 * HOUR_MS,
  reset_password: 24 * HOUR_MS,
  invitation: 7 * 24 * HOUR_MS,
});

/** The portal pages the links open: both password links the same page. */
const LINK_PATHS: Readonly<Record<LinkPurpose, string>> = Object.freeze({
  set_password: '/portal/set-password',
  reset_password: '/portal/set-password',
  invitation: '/portal/accept-invitation',
});

export interface OneTimeLinkRecord {
  /** The token's id: the record's key, not secret. */
  id: string;
  secretHash: Buffer;
  purpose: LinkPurpose;
  /** Whose password the link sets; null for an invitation. */
  developerId: string | null;
  /** The app an invitation is to; null for a password link. */
  appId: string | null;
  /** The (normalised) address an invitation is for; null for a password link. */
  email: string | null;
  /** The developer who invited; null for the operator, and for password links. */
  invitedBy: string | null;
  /** UNIX ms. */
  createdAt: number;
  /** UNIX ms: the link works before this instant only. */
  expiresAt: number;
}

/** A link as it is handed out: its secret token appears only here, once. */
export interface IssuedLink {
  purpose: LinkPurpose;
  /** The link's id (public): what events and listings name. */
  linkId: string;
  /** The page and its token, relative to the portal's public URL. */
  path: string;
  /** The whole link, when the public URL (`PUBLIC_URL`) is known; null otherwise. */
  url: string | null;
  expiresAt: string;
}

export function issuedLink(
  purpose: LinkPurpose,
  linkId: string,
  token: string,
  expiresAt: number,
  publicUrl: string | undefined,
): IssuedLink {
  const path = `${LINK_PATHS[purpose]}?token=${encodeURIComponent(token)}`;
  return {
    purpose,
    linkId,
    path,
    url: publicUrl === undefined ? null : `${publicUrl.replace(/\/+$/, '')}${path}`,
    expiresAt: new Date(expiresAt).toISOString(),
  };
}
