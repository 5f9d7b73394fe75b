/**
 * Who may do what on an app (docs/portal.md, "Membership"). An app has at most one owner; without
 * one it is the operator's alone. The owner may invite collaborators, who may do everything the
 * owner may except rotate the ClientSecret, delete the app, manage collaborators or manage webhooks
 * (which send the app's events elsewhere), as in Kii's portal (and, managing credentials, grant
 * `credentials:manage` or `webhooks:manage`: `CredentialService`). The operator (the CLI) is not a member and is not asked.
 */
export type AppRole = 'owner' | 'collaborator';

export const APP_ROLES: readonly AppRole[] = ['owner', 'collaborator'];

export const APP_ACTIONS = [
  'view_app',
  'view_configuration',
  'view_events',
  'change_configuration',
  'introspect_tokens',
  'revoke_tokens',
  'manage_credentials',
  'manage_webhooks',
  'rotate_secret',
  'delete_app',
  'manage_collaborators',
] as const;

export type AppAction = (typeof APP_ACTIONS)[number];

const OWNER_ONLY: ReadonlySet<AppAction> = new Set(['rotate_secret', 'delete_app', 'manage_collaborators', 'manage_webhooks']);

/** Whether a developer with `role` on an app (undefined: none) may do `action` on it. */
export function mayAct(role: AppRole | undefined, action: AppAction): boolean {
  if (role === undefined) return false;
  return role === 'owner' || !OWNER_ONLY.has(action);
}

/**
 * What a developer may do on an app, from its role read once (`AppMembers.permissions`): the role,
 * and for each action whether the role allows it (`mayAct`), so that a page shows only what works
 * without restating who may do what.
 */
export interface AppPermissions {
  role: AppRole;
  may: Readonly<Record<AppAction, boolean>>;
}

export function permissionsOf(role: AppRole): AppPermissions {
  return { role, may: Object.fromEntries(APP_ACTIONS.map((action) => [action, mayAct(role, action)])) as Record<AppAction, boolean> };
}

export function isAppRole(value: string): value is AppRole {
  return (APP_ROLES as readonly string[]).includes(value);
}
