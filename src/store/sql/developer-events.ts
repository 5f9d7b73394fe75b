import { MAX_EVENTS_PER_DEVELOPER, type NewDeveloperEvent } from '../../developers/events.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

/** Writes events of developers' account logs in the transaction of the change they describe. */
export async function insertDeveloperEvents(tx: SqlRunner, batch: readonly NewDeveloperEvent[]): Promise<void> {
  for (const event of batch) {
    await tx.run(
      `INSERT INTO developer_events (developer_id, type, at, actor, client_address, details)
       VALUES (:developerId, :type, :at, :actor, :clientAddress, :details)`,
      { ...event, details: JSON.stringify(event.details) },
    );
  }
  // A developer can cause any number of sign-ins: each keeps its newest events only.
  for (const developerId of new Set(batch.map((event) => event.developerId))) {
    await tx.run(
      `DELETE FROM developer_events WHERE developer_id = :developerId AND id <=
         (SELECT id FROM developer_events WHERE developer_id = :developerId ORDER BY id DESC LIMIT 1 OFFSET :keep)`,
      { developerId, keep: MAX_EVENTS_PER_DEVELOPER },
    );
  }
}
