import { MAX_EVENTS_PER_DEVELOPER, type NewDeveloperEvent } from '../../developers/events.js';
import type { SqliteDatabase } from './connection.js';

/** Writes events of developers' account logs, in the transaction of the change they describe. */
export type SqliteDeveloperEventWrites = (batch: NewDeveloperEvent[]) => void;

export function prepareDeveloperEventWrites(db: SqliteDatabase): SqliteDeveloperEventWrites {
  const insertEvent = db.prepare(
    `INSERT INTO developer_events (developer_id, type, at, actor, client_address, details)
     VALUES (:developerId, :type, :at, :actor, :clientAddress, :details)`,
  );
  const nthNewestEvent = db.prepare('SELECT id FROM developer_events WHERE developer_id = :developerId ORDER BY id DESC LIMIT 1 OFFSET :keep');
  const deleteEventsUpTo = db.prepare('DELETE FROM developer_events WHERE developer_id = :developerId AND id <= :lastId');
  return (batch) => {
    for (const event of batch) insertEvent.run({ ...event, details: JSON.stringify(event.details) });
    // A developer can cause any number of sign-ins: each keeps its newest events only.
    for (const developerId of new Set(batch.map((event) => event.developerId))) {
      const last = nthNewestEvent.get({ developerId, keep: MAX_EVENTS_PER_DEVELOPER }) as { id: number } | undefined;
      if (last !== undefined) deleteEventsUpTo.run({ developerId, lastId: last.id });
    }
  };
}
