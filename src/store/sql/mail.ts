import type { AlertMember, ClaimedMail, MailStore, PendingAlert } from '../../mail/store.js';
import type { MailKind } from '../../mail/message.js';
import type { Actor } from '../../request-context.js';
import { bytesColumn, jsonColumn } from 'tessera-tokens/internal/store/sql/rows.js';
import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

interface ClaimedRow {
  id: number;
  kind: MailKind;
  recipient: string;
  message: Uint8Array | ArrayBuffer;
  attempts: number;
}

interface AlertRow {
  id: number;
  app_id: string;
  event_id: number;
  event_type: string;
  event_at: number;
  principal: Actor | null;
  details: unknown;
}

interface MemberRow {
  developer_id: string;
  email: string;
  email_confirmed_at: number | null;
  disabled_at: number | null;
  opted_out: number | boolean;
}

// The bounds are checked by the insertion itself: mail written at the same moment by other
// transactions may pass them by a few, never by a batch.
const ENQUEUE_BOUNDS = `WHERE (SELECT count(*) FROM mail_outbox WHERE state = 'pending' AND recipient = :recipient AND kind = :kind) < :perRecipientAndKind
     AND (SELECT count(*) FROM mail_outbox WHERE state = 'pending') < :total`;
const ENQUEUE = {
  sqlite: `INSERT INTO mail_outbox (kind, recipient, message, next_attempt_at, created_at)
            SELECT :kind, :recipient, :message, :createdAt, :createdAt ${ENQUEUE_BOUNDS}`,
  postgres: `INSERT INTO mail_outbox (kind, recipient, message, next_attempt_at, created_at)
              SELECT CAST(:kind AS text), CAST(:recipient AS text), CAST(:message AS bytea), CAST(:createdAt AS bigint),
                     CAST(:createdAt AS bigint) ${ENQUEUE_BOUNDS}`,
};

const DUE = `SELECT id FROM mail_outbox WHERE state = 'pending' AND next_attempt_at <= :now ORDER BY next_attempt_at LIMIT :batch`;

const CLAIM = {
  sqlite: `UPDATE mail_outbox SET next_attempt_at = :leaseUntil, attempts = attempts + 1
            WHERE id IN (${DUE}) RETURNING id, kind, recipient, message, attempts`,
  postgres: `UPDATE mail_outbox SET next_attempt_at = :leaseUntil, attempts = attempts + 1
              WHERE id IN (${DUE} FOR UPDATE SKIP LOCKED) RETURNING id, kind, recipient, message, attempts`,
};

const ALERTS = 'SELECT id, app_id, event_id, event_type, event_at, principal, details FROM pending_alerts ORDER BY id LIMIT :batch';

export function sqlMailStore(db: SqlRunner): MailStore {
  return {
    async enqueue(mail, bounds) {
      const written = await db.run(ENQUEUE, { ...mail, ...bounds });
      return written > 0 ? true : undefined;
    },
    async claimDue(now, leaseUntil, batch) {
      // A read first: a poll that finds nothing due writes nothing (on SQLite, takes no write lock).
      if (
        (await db.get("SELECT 1 AS due FROM mail_outbox WHERE state = 'pending' AND next_attempt_at <= :now LIMIT 1", { now })) ===
        undefined
      ) {
        return [];
      }
      const rows = await db.all<ClaimedRow>(CLAIM, { now, leaseUntil, batch });
      return rows.map((row): ClaimedMail => ({ ...row, message: bytesColumn(row.message) })).sort((one, other) => one.id - other.id);
    },
    async markSent(id) {
      await db.run("UPDATE mail_outbox SET state = 'sent', last_error = NULL WHERE id = :id", { id });
    },
    async markAttemptFailed(id, error, nextAttemptAt) {
      await db.run(
        nextAttemptAt === null
          ? "UPDATE mail_outbox SET state = 'failed', last_error = :error WHERE id = :id"
          : 'UPDATE mail_outbox SET next_attempt_at = :nextAttemptAt, last_error = :error WHERE id = :id',
        nextAttemptAt === null ? { id, error } : { id, error, nextAttemptAt },
      );
    },
    async countPending() {
      const row = await db.get<{ pending: number }>("SELECT count(*) AS pending FROM mail_outbox WHERE state = 'pending'");
      return Number(row?.pending ?? 0);
    },
    async deleteFinishedBefore(cutoff, batch) {
      return db.run(
        `DELETE FROM mail_outbox WHERE id IN
           (SELECT id FROM mail_outbox WHERE state <> 'pending' AND created_at < :cutoff ORDER BY id LIMIT :batch)`,
        { cutoff, batch },
      );
    },

    async claimAlerts(batch) {
      const rows = await db.all<AlertRow>({ sqlite: ALERTS, postgres: `${ALERTS} FOR UPDATE SKIP LOCKED` }, { batch });
      return rows.map((row): PendingAlert => ({
        id: row.id,
        appId: row.app_id,
        eventId: row.event_id,
        eventType: row.event_type,
        eventAt: row.event_at,
        principal: row.principal,
        details: jsonColumn<Record<string, unknown>>(row.details),
      }));
    },
    async deleteAlert(id) {
      await db.run('DELETE FROM pending_alerts WHERE id = :id', { id });
    },
    async deleteAlertsBefore(cutoff, batch) {
      // Ids grow with the events' time: the oldest alerts are the first ids.
      return db.run(
        'DELETE FROM pending_alerts WHERE id IN (SELECT id FROM pending_alerts WHERE event_at < :cutoff ORDER BY id LIMIT :batch)',
        {
          cutoff,
          batch,
        },
      );
    },
    async claimNotice(appId, kind, hour) {
      const written = await db.run('INSERT INTO alert_notices (app_id, kind, hour) VALUES (:appId, :kind, :hour) ON CONFLICT DO NOTHING', {
        appId,
        kind,
        hour,
      });
      return written > 0 ? true : undefined;
    },
    async deleteNoticesBefore(hour, batch) {
      return db.run(
        `DELETE FROM alert_notices WHERE (app_id, kind, hour) IN
           (SELECT app_id, kind, hour FROM alert_notices WHERE hour < :hour LIMIT :batch)`,
        { hour, batch },
      );
    },
    async alertMembers(appId) {
      const rows = await db.all<MemberRow>(
        `SELECT d.id AS developer_id, d.email, d.email_confirmed_at, d.disabled_at,
                CASE WHEN o.developer_id IS NULL THEN 0 ELSE 1 END AS opted_out
           FROM app_members m
           JOIN developers d ON d.id = m.developer_id
           LEFT JOIN alert_opt_outs o ON o.app_id = m.app_id AND o.developer_id = m.developer_id
          WHERE m.app_id = :appId
          ORDER BY m.role DESC, m.added_at, d.id`,
        { appId },
      );
      return rows.map((row): AlertMember => ({
        developerId: row.developer_id,
        email: row.email,
        emailConfirmed: row.email_confirmed_at !== null,
        disabled: row.disabled_at !== null,
        optedOut: Number(row.opted_out) === 1,
      }));
    },
    async setOptOut(appId, developerId, optedOut) {
      await db.run(
        optedOut
          ? 'INSERT INTO alert_opt_outs (app_id, developer_id) VALUES (:appId, :developerId) ON CONFLICT DO NOTHING'
          : 'DELETE FROM alert_opt_outs WHERE app_id = :appId AND developer_id = :developerId',
        { appId, developerId },
      );
    },
    async isOptedOut(appId, developerId) {
      return (
        (await db.get('SELECT 1 AS found FROM alert_opt_outs WHERE app_id = :appId AND developer_id = :developerId', {
          appId,
          developerId,
        })) !== undefined
      );
    },

    async confirmEmail(developerId, email, at) {
      const updated = await db.run(
        'UPDATE developers SET email_confirmed_at = :at WHERE id = :developerId AND email = :email AND email_confirmed_at IS NULL',
        { developerId, email, at },
      );
      return updated > 0 ? true : undefined;
    },
  };
}
