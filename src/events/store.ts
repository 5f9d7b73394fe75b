import type { AuditEvent, EventType, NewAuditEvent } from './event.js';

export interface EventQuery {
  appId: string;
  type?: EventType;
  /** Only events with a smaller id (the cursor of the page before). */
  beforeId?: number;
  /** Only events with a larger id (`tessera events --follow`). */
  afterId?: number;
  limit: number;
}

/** The audit log's storage seam; one implementation per backend under `src/store/`. */
export interface EventStore {
  /** Writes the events in one transaction, in order. */
  append(events: NewAuditEvent[]): Promise<void>;
  /** Newest first, or oldest first with `afterId`. */
  list(query: EventQuery): Promise<AuditEvent[]>;
  /** Deletes up to `batch` of the app's oldest events beyond its newest `keep`; returns how many. */
  trimApp(appId: string, keep: number, batch: number): Promise<number>;
  /** Deletes up to `batch` of the oldest events recorded before `cutoff` (UNIX ms); returns how many. */
  deleteOlderThan(cutoff: number, batch: number): Promise<number>;
}
