import type { TakenDelivery, WebhookStore } from '../../webhooks/store.js';
import type { DeliveryRecord, WebhookRecord } from '../../webhooks/webhook.js';
import { bytesColumn, jsonColumn } from 'tessera-tokens/internal/store/sql/rows.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

interface WebhookRow {
  id: string;
  app_id: string;
  url: string;
  event_types: unknown;
  secret: Uint8Array;
  previous_secret: Uint8Array | null;
  previous_secret_until: number | null;
  created_at: number;
}

interface DeliveryRow {
  id: number;
  webhook_id: string;
  app_id: string;
  event_id: number;
  event_type: string;
  event_at: number;
  principal: string | null;
  client_address: string | null;
  details: unknown;
  state: DeliveryRecord['state'];
  attempts: number;
  next_attempt_at: number;
  created_at: number;
  last_attempt_at: number | null;
  last_status: number | null;
  last_error: string | null;
  last_response: string | null;
}

const WEBHOOK_COLUMNS = 'id, app_id, url, event_types, secret, previous_secret, previous_secret_until, created_at';
const DELIVERY_COLUMNS = `id, webhook_id, app_id, event_id, event_type, event_at, principal, client_address, details, state, attempts,
  next_attempt_at, created_at, last_attempt_at, last_status, last_error, last_response`;

/**
 * The due deliveries, oldest due first, each given one more attempt and a lease. PostgreSQL skips
 * those another instance is taking at the same moment; SQLite's writes take turns anyway.
 */
const TAKE_DUE = {
  sqlite: `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = :leaseUntil, last_attempt_at = :now
    WHERE id IN (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= :now ORDER BY next_attempt_at LIMIT :limit)
    RETURNING ${DELIVERY_COLUMNS}`,
  postgres: `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = :leaseUntil, last_attempt_at = :now
    WHERE id IN (SELECT id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= :now
                 ORDER BY next_attempt_at LIMIT :limit FOR UPDATE SKIP LOCKED)
    RETURNING ${DELIVERY_COLUMNS}`,
};

/** Each webhook's waiting deliveries past its newest `:keep` (by their events' order), marked failed. */
const FAIL_OVERFLOW = `UPDATE webhook_deliveries SET state = 'failed', last_error = 'queue full: more deliveries were waiting than a webhook may have',
    next_attempt_at = :at
  WHERE state = 'pending' AND id IN (
    SELECT id FROM (
      SELECT id, row_number() OVER (PARTITION BY webhook_id ORDER BY event_id DESC, id DESC) AS position
        FROM webhook_deliveries WHERE state = 'pending' AND webhook_id IN
          (SELECT webhook_id FROM webhook_deliveries WHERE state = 'pending' GROUP BY webhook_id HAVING count(*) > :keep)
    ) AS ranked WHERE position > :keep)`;

/** Ended deliveries older than `:cutoff` or past their webhook's newest `:keep`, up to `:batch`. */
const DELETE_ENDED = `DELETE FROM webhook_deliveries WHERE id IN (
    SELECT id FROM (
      SELECT id, created_at, row_number() OVER (PARTITION BY webhook_id ORDER BY id DESC) AS position
        FROM webhook_deliveries WHERE state <> 'pending'
    ) AS ranked WHERE created_at < :cutoff OR position > :keep LIMIT :batch)`;

export function sqlWebhookStore(db: SqlRunner): WebhookStore {
  return {
    async listOf(appId) {
      const rows = await db.all<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE app_id = :appId ORDER BY created_at, id`, {
        appId,
      });
      return rows.map(toWebhook);
    },
    async find(appId, webhookId) {
      const row = await db.get<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE app_id = :appId AND id = :webhookId`, {
        appId,
        webhookId,
      });
      return row === undefined ? undefined : toWebhook(row);
    },
    async countOf(appId) {
      return Number((await db.get<{ n: number }>('SELECT count(*) AS n FROM webhooks WHERE app_id = :appId', { appId }))?.n ?? 0);
    },
    async insert(record) {
      await db.run(
        `INSERT INTO webhooks (${WEBHOOK_COLUMNS})
         VALUES (:id, :appId, :url, :eventTypes, :secret, :previousSecret, :previousSecretUntil, :createdAt)`,
        { ...record, eventTypes: JSON.stringify(record.eventTypes) },
      );
    },
    async delete(appId, webhookId) {
      return (await db.run('DELETE FROM webhooks WHERE app_id = :appId AND id = :webhookId', { appId, webhookId })) > 0 ? true : undefined;
    },
    async replaceSecret(appId, webhookId, secret, previousSecret, previousSecretUntil) {
      const changed = await db.run(
        `UPDATE webhooks SET secret = :secret, previous_secret = :previousSecret, previous_secret_until = :previousSecretUntil
         WHERE app_id = :appId AND id = :webhookId`,
        { appId, webhookId, secret, previousSecret, previousSecretUntil },
      );
      return changed > 0 ? true : undefined;
    },
    async listDeliveries(appId, webhookId, beforeId, limit) {
      const rows = await db.all<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
         WHERE webhook_id = :webhookId AND app_id = :appId AND id < :beforeId ORDER BY id DESC LIMIT :limit`,
        { appId, webhookId, beforeId: beforeId ?? Number.MAX_SAFE_INTEGER, limit },
      );
      return rows.map(toDelivery);
    },
    async takeDue(now, leaseUntil, limit) {
      // A read first: a poll that finds nothing due writes nothing (on SQLite, takes no write lock).
      const due = await db.get("SELECT 1 AS due FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= :now LIMIT 1", {
        now,
      });
      if (due === undefined) return [];
      const rows = await db.all<DeliveryRow>(TAKE_DUE, { now, leaseUntil, limit });
      if (rows.length === 0) return [];
      const ids = [...new Set(rows.map((row) => row.webhook_id))];
      const webhooks = new Map<string, WebhookRecord>();
      // A few webhooks at a time: one statement, its ids bound one by one (both dialects).
      const placeholders = ids.map((_, index) => `:id${index}`).join(', ');
      const found = await db.all<WebhookRow>(
        `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id IN (${placeholders})`,
        Object.fromEntries(ids.map((id, index) => [`id${index}`, id])),
      );
      for (const row of found) webhooks.set(row.id, toWebhook(row));
      const taken: TakenDelivery[] = [];
      for (const row of rows) {
        const webhook = webhooks.get(row.webhook_id);
        // Deleted since it was taken: its deliveries went with it.
        if (webhook !== undefined) taken.push({ delivery: toDelivery(row), webhook });
      }
      return taken;
    },
    async recordAttempt(deliveryId, attempts, attemptedAt, outcome) {
      const changed = await db.run(
        `UPDATE webhook_deliveries SET state = :state, next_attempt_at = :nextAttemptAt, last_status = :lastStatus,
                last_error = :lastError, last_response = :lastResponse
         WHERE id = :deliveryId AND state = 'pending' AND attempts = :attempts AND last_attempt_at = :attemptedAt`,
        { deliveryId, attempts, attemptedAt, ...outcome },
      );
      return changed > 0;
    },
    async resend(appId, webhookId, deliveryId, now) {
      const changed = await db.run(
        `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = :now
         WHERE id = :deliveryId AND webhook_id = :webhookId AND app_id = :appId`,
        { appId, webhookId, deliveryId, now },
      );
      return changed > 0 ? true : undefined;
    },
    async failOverflow(keepPending, at) {
      return db.run(FAIL_OVERFLOW, { keep: keepPending, at });
    },
    async deleteEnded(cutoff, keep, batch) {
      return db.run(DELETE_ENDED, { cutoff, keep, batch });
    },
    async backlog(now, overdueBy) {
      const row = await db.get<{ oldest: number | null; overdue: number }>(
        `SELECT min(event_at) AS oldest, count(CASE WHEN next_attempt_at < :overdueBefore THEN 1 END) AS overdue
         FROM webhook_deliveries WHERE state = 'pending'`,
        { overdueBefore: now - overdueBy },
      );
      return { oldestPendingAt: row?.oldest == null ? null : Number(row.oldest), overdue: Number(row?.overdue ?? 0) };
    },
  };
}

function toWebhook(row: WebhookRow): WebhookRecord {
  return {
    id: row.id,
    appId: row.app_id,
    url: row.url,
    eventTypes: jsonColumn<WebhookRecord['eventTypes']>(row.event_types),
    secret: bytesColumn(row.secret),
    previousSecret: row.previous_secret === null ? null : bytesColumn(row.previous_secret),
    previousSecretUntil: row.previous_secret_until === null ? null : Number(row.previous_secret_until),
    createdAt: Number(row.created_at),
  };
}

function toDelivery(row: DeliveryRow): DeliveryRecord {
  return {
    id: Number(row.id),
    webhookId: row.webhook_id,
    appId: row.app_id,
    event: {
      id: Number(row.event_id),
      type: row.event_type as DeliveryRecord['event']['type'],
      at: Number(row.event_at),
      principal: row.principal as DeliveryRecord['event']['principal'],
      clientAddress: row.client_address,
      details: jsonColumn<DeliveryRecord['event']['details']>(row.details),
    },
    state: row.state,
    attempts: Number(row.attempts),
    nextAttemptAt: Number(row.next_attempt_at),
    createdAt: Number(row.created_at),
    lastAttemptAt: row.last_attempt_at === null ? null : Number(row.last_attempt_at),
    lastStatus: row.last_status === null ? null : Number(row.last_status),
    lastError: row.last_error,
    lastResponse: row.last_response,
  };
}
