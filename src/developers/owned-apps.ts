import type { AppService, CreatedApp } from '../apps/service.js';
import { TesseraError } from '../errors.js';
import type { RequestContext } from '../request-context.js';
import type { DeveloperAccounts } from './accounts.js';
import type { AppMembers } from './members.js';

export type OwnedApp = CreatedApp & { owner: { id: string; email: string } };

/** Apps created with an owner: by the operator (`apps create --owner`) or by a developer in the portal. */
export class OwnedApps {
  constructor(
    private readonly apps: AppService,
    private readonly developers: DeveloperAccounts,
    private readonly members: AppMembers,
  ) {}

  /**
   * An app with an owner from the start. The owner is checked first, so that a wrong email creates
   * nothing; should it be disabled or deleted between the check and the write, the app is deleted again.
   */
  async create(name: string, ownerEmail: string, context: RequestContext): Promise<OwnedApp> {
    const developer = await this.developers.find(ownerEmail);
    if (developer.disabledAt !== null) throw new TesseraError('invalid_request', 'This developer is disabled: choose another one.');
    const created = await this.apps.create(name);
    try {
      const { owner } = await this.members.ownNewApp(created.appId, developer.email, context);
      return { ...created, owner: { id: owner.id, email: owner.email } };
    } catch (error) {
      await this.apps.delete(created.appId, context).catch(() => {});
      throw error;
    }
  }
}
