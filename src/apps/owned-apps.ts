import type { DeveloperAccounts } from '../developers/accounts.js';
import type { DeveloperLimits } from '../developers/developer-limits.js';
import { operatorRequired } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { actingDeveloperId, requireOperator, type RequestContext } from '../request-context.js';
import { AppLimitReached, checkedAppName, type AppService, type CreatedApp } from './service.js';

export type OwnedApp = CreatedApp & { owner: { id: string; email: string } };

/** Apps created with an owner: by the operator (`apps create --owner`) or by a developer in the portal. */
export class OwnedApps {
  constructor(
    private readonly apps: AppService,
    private readonly developers: DeveloperAccounts,
    private readonly limits: DeveloperLimits,
  ) {}

  /**
   * An app with an owner from the start, both written together. The owner is checked first, so
   * that a wrong email creates nothing. A developer creating its own app in the portal is held by
   * its limits (`DeveloperLimits`): how many it may create an hour, taken before anything is
   * written, and how many it may own, counted as the app is written; the operator is held by none.
   * Only the operator gives an app to someone else: a developer creates its own, and anyone else
   * (a request that names nobody, an admin token) is refused.
   */
  async create(name: string, ownerEmail: string, context: RequestContext, { once }: { once?: string } = {}): Promise<OwnedApp> {
    // Refused before the email is looked up: whoever may not give an app learns nothing of who exists.
    const asking = actingDeveloperId(context);
    if (asking === undefined) requireOperator(context);
    const developer = await this.developers.find(ownerEmail);
    if (asking !== undefined && asking !== developer.id) throw operatorRequired();
    if (developer.disabledAt !== null) throw new TesseraError('invalid_request', 'This developer is disabled: choose another one.');
    const limited = context.by !== 'operator';
    if (limited) {
      checkedAppName(name);
      await this.limits.takeAppCreation(developer.id, context);
    }
    try {
      const created = await this.apps.create(name, {
        developerId: developer.id,
        maxOwnedApps: limited ? this.limits.ownedApps : null,
        context,
        once,
      });
      return { ...created, owner: { id: developer.id, email: developer.email } };
    } catch (error) {
      if (error instanceof AppLimitReached) {
        await this.limits.giveBackAppCreation(developer.id);
        throw await this.limits.appLimitReached(developer.id, error.ownedApps, context);
      }
      throw error;
    }
  }
}
