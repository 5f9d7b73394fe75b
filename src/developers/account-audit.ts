import type { EventStore } from '../events/store.js';
import type { AccountAudit } from './events.js';
import type { DeveloperStore } from './store.js';

/** The tables an account change is written to, with its events, in one transaction. */
export interface AccountTables {
  readonly developers: DeveloperStore;
  readonly events: EventStore;
}

/** Writes the events of an account change (`AccountAudit`) in the change's transaction: both are written, or neither. */
export async function writeAccountAudit(tx: AccountTables, { developer = [], app = [] }: AccountAudit): Promise<void> {
  await tx.developers.accounts.appendEvents(developer);
  await tx.events.append(app);
}
