import { mayAct, type AppAction, type AppRole } from './developers/roles.js';
import type { BuiltInScope } from 'tessera-tokens/internal/credentials/scopes.js';
import { adminRequired, appNotFound, insufficientScope } from 'tessera-tokens/internal/error-catalogue.js';
import type { Principal } from 'tessera-tokens/internal/principal.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { RequestContext } from './request-context.js';

/** A developer's role on an app; undefined if it is no member (the members store's answer). */
export type RoleLookup = (appId: string, developerId: string) => Promise<AppRole | undefined>;

/**
 * What an app's admin token may do on its own app (the contract's admin features), and the scope
 * each needs of a token that has scopes (one issued from a credential): see it, its configuration
 * and its events, change its configuration, introspect and revoke its tokens, manage its
 * credentials and its webhooks. Never rotate its ClientSecret (a leaked token must not lock the owner out), delete
 * it or change its people.
 */
const SCOPE_OF_ADMIN_ACTION: ReadonlyMap<AppAction, BuiltInScope> = new Map<AppAction, BuiltInScope>([
  ['view_app', 'app:read'],
  ['view_configuration', 'configuration:read'],
  ['view_events', 'events:read'],
  ['change_configuration', 'configuration:write'],
  ['introspect_tokens', 'tokens:introspect'],
  ['revoke_tokens', 'tokens:revoke'],
  ['manage_credentials', 'credentials:manage'],
  ['manage_webhooks', 'webhooks:manage'],
]);

/**
 * Throws `INSUFFICIENT_SCOPE` unless the app's admin principal may do `action`: one of the app's own
 * ClientID may do every admin feature, one with scopes only those its scopes name.
 */
export function checkAdminScope(principal: Principal, action: AppAction): void {
  if (principal.scopes === null) return;
  const scope = SCOPE_OF_ADMIN_ACTION.get(action);
  if (scope === undefined || !principal.scopes.includes(scope)) throw insufficientScope(scope);
}

/**
 * Who may do what on an app, asked by every service operation that reads or changes one app before
 * it reads or writes anything of it, whichever page, route or command calls it: the operator (the
 * CLI) anything; the app's admin token its admin features; a developer what its role allows
 * (`mayAct`).
 */
export class AppAccess {
  /**
   * The roles read for each request, by its context: a page that makes several calls for one app
   * (the app, its credentials, its members) reads the developer's role once. A context is made for
   * one request and dropped with it (the portal's `asDeveloper`), so nothing read here outlives the
   * request; a context that is not kept gets a read of its own, as before.
   */
  readonly #rolesRead = new WeakMap<RequestContext, Map<string, Promise<AppRole | undefined>>>();

  constructor(private readonly roleOf: RoleLookup) {}

  /**
   * Throws unless whoever `context` names may do `action` on the app. Callers of the API without the
   * app's admin token get `ADMIN_REQUIRED` for its admin features, `FORBIDDEN` for anything else.
   */
  async authorize(appId: string, action: AppAction, context: RequestContext): Promise<void> {
    const { by } = context;
    if (by === 'operator') return;
    if (by !== null && by.kind === 'developer') {
      await this.authorizeDeveloper(appId, by.developerId, action, context);
      return;
    }
    if (!SCOPE_OF_ADMIN_ACTION.has(action)) throw new TesseraError('FORBIDDEN', 'Only a developer of the app may do this.');
    if (by === null || by.kind !== 'admin' || by.appId !== appId) throw adminRequired();
    checkAdminScope(by, action);
  }

  /**
   * The developer's role, if it allows `action`. An app the developer is no member of is
   * `APP_NOT_FOUND`, exactly as an app that does not exist; a member whose role does not allow the
   * action gets `FORBIDDEN`. With the request's `context`, the role is read once for the request.
   */
  async authorizeDeveloper(appId: string, developerId: string, action: AppAction, context?: RequestContext): Promise<AppRole> {
    const role = await (context === undefined ? this.roleOf(appId, developerId) : this.#roleFor(context, appId, developerId));
    if (role === undefined) throw appNotFound();
    if (!mayAct(role, action)) throw new TesseraError('FORBIDDEN', 'Only the app\u2019s owner may do this.');
    return role;
  }

  /** Whether the developer's role on the app allows `action` now (false: no member, or a role that does not). */
  async mayDeveloper(appId: string, developerId: string, action: AppAction): Promise<boolean> {
    return mayAct(await this.roleOf(appId, developerId), action);
  }

  /** The developer's role on the app, read at the request's first question; a read that failed is not kept. */
  #roleFor(context: RequestContext, appId: string, developerId: string): Promise<AppRole | undefined> {
    let roles = this.#rolesRead.get(context);
    if (roles === undefined) {
      roles = new Map();
      this.#rolesRead.set(context, roles);
    }
    const key = `${appId}\n${developerId}`;
    let role = roles.get(key);
    if (role === undefined) {
      role = this.roleOf(appId, developerId);
      roles.set(key, role);
      const read = roles;
      role.catch(() => read.delete(key));
    }
    return role;
  }
}
