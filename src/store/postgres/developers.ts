import type pg from 'pg';
import { MAX_EVENTS_PER_DEVELOPER, type NewDeveloperEvent } from '../../developers/events.js';

/** Writes events of developers' account logs on the connection of the change they describe, before its COMMIT. */
export async function insertDeveloperEvents(client: pg.PoolClient, batch: NewDeveloperEvent[]): Promise<void> {
  for (const event of batch) {
    await client.query({
      name: 'tessera-insert-developer-event',
      text: `INSERT INTO developer_events (developer_id, type, at, actor, client_address, details) VALUES ($1, $2, $3, $4, $5, $6)`,
      values: [event.developerId, event.type, event.at, event.actor, event.clientAddress, JSON.stringify(event.details)],
    });
  }
  // A developer can cause any number of sign-ins: each keeps its newest events only.
  for (const developerId of new Set(batch.map((event) => event.developerId))) {
    await client.query({
      name: 'tessera-trim-developer-events',
      text: `DELETE FROM developer_events WHERE developer_id = $1 AND id <=
               (SELECT id FROM developer_events WHERE developer_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)`,
      values: [developerId, MAX_EVENTS_PER_DEVELOPER],
    });
  }
}
