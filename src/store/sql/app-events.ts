import type { NewAuditEvent } from '../../events/event.js';
import type { SqlRunner } from './runner.js';

/** Writes app events in the transaction of the change they describe: both are written, or neither. */
export async function insertEvents(tx: SqlRunner, batch: readonly NewAuditEvent[]): Promise<void> {
  for (const event of batch) {
    await tx.run(
      `INSERT INTO events (app_id, type, at, principal, client_address, details)
       VALUES (:appId, :type, :at, :principal, :clientAddress, :details)`,
      { ...event, details: JSON.stringify(event.details) },
    );
  }
}
