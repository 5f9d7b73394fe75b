import type { AccountAudit } from '../../developers/events.js';
import { insertDeveloperEvents } from './developer-events.js';
import { insertEvents } from './events.js';
import type { SqlRunner } from './runner.js';

/** Writes the events of an account change (`AccountAudit`) in the change's transaction: both are written, or neither. */
export async function writeAccountAudit(tx: SqlRunner, { developer = [], app = [] }: AccountAudit): Promise<void> {
  await insertDeveloperEvents(tx, developer);
  await insertEvents(tx, app);
}
