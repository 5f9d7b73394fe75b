import { describeEvent, type AuditEvent } from '../events/event.js';

/** An audit event as a webhook delivers it: a CloudEvents 1.0 event in its JSON format (structured mode). */
export interface CloudEvent {
  specversion: '1.0';
  /** The audit event's id: unique for its `source`; a retry sends the same. */
  id: string;
  /** The app, as a URI reference: `/api/apps/{appId}` (its issuer without the service's base). */
  source: string;
  /** `tessera.` and the audit event's type: `tessera.token.refused`, `tessera.app.secret_exposed`. */
  type: string;
  /** The app's id. */
  subject: string;
  time: string;
  datacontenttype: 'application/json';
  /** The event as `GET …/events` describes it. */
  data: ReturnType<typeof describeEvent>;
}

export const CLOUD_EVENT_TYPE_PREFIX = 'tessera.';

export function cloudEventOf(event: AuditEvent): CloudEvent {
  const data = describeEvent(event);
  return {
    specversion: '1.0',
    id: data.id,
    source: `/api/apps/${encodeURIComponent(event.appId)}`,
    type: `${CLOUD_EVENT_TYPE_PREFIX}${event.type}`,
    subject: event.appId,
    time: data.at,
    datacontenttype: 'application/json',
    data,
  };
}
