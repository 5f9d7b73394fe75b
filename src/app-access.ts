import { mayAct, type AppAction, type AppRole } from './developers/roles.js';
import { adminRequired, appNotFound } from './error-catalogue.js';
import { TesseraError } from './errors.js';
import type { RequestContext } from './request-context.js';

/** A developer's role on an app; undefined if it is no member (the members store's answer). */
export type RoleLookup = (appId: string, developerId: string) => Promise<AppRole | undefined>;

/**
 * What an app's admin token may do on its own app (the contract's admin features): see it, change
 * its configuration, revoke its tokens. Never rotate its ClientSecret (a leaked token must not lock
 * the owner out), delete it or change its people.
 */
const ADMIN_TOKEN_ACTIONS: ReadonlySet<AppAction> = new Set(['view_app', 'view_events', 'change_configuration', 'revoke_tokens']);

/**
 * Who may do what on an app, asked by every service operation that reads or changes one app before
 * it reads or writes anything of it, whichever page, route or command calls it: the operator (the
 * CLI) anything; the app's admin token its admin features; a developer what its role allows
 * (`mayAct`).
 */
export class AppAccess {
  constructor(private readonly roleOf: RoleLookup) {}

  /**
   * Throws unless whoever `context` names may do `action` on the app. Callers of the API without the
   * app's admin token get `ADMIN_REQUIRED` for its admin features, `FORBIDDEN` for anything else.
   */
  async authorize(appId: string, action: AppAction, context: RequestContext): Promise<void> {
    const { by } = context;
    if (by === 'operator') return;
    if (by !== null && by.kind === 'developer') {
      await this.authorizeDeveloper(appId, by.developerId, action);
      return;
    }
    if (!ADMIN_TOKEN_ACTIONS.has(action)) throw new TesseraError('FORBIDDEN', 'Only a developer of the app may do this.');
    if (by === null || by.kind !== 'admin' || by.appId !== appId) throw adminRequired();
  }

  /**
   * The developer's role, if it allows `action`. An app the developer is no member of is
   * `APP_NOT_FOUND`, exactly as an app that does not exist; a member whose role does not allow the
   * action gets `FORBIDDEN`.
   */
  async authorizeDeveloper(appId: string, developerId: string, action: AppAction): Promise<AppRole> {
    const role = await this.roleOf(appId, developerId);
    if (role === undefined) throw appNotFound();
    if (!mayAct(role, action)) throw new TesseraError('FORBIDDEN', 'Only the app\u2019s owner may do this.');
    return role;
  }
}
