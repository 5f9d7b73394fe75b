import type { Heartbeat, InstanceRecord, UpgradeState, UpgradeStore } from '../../upgrade/store.js';
import { withRowLock, type SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

interface InstanceRow {
  id: string;
  release: string;
  build_commit: string;
  host: string;
  pid: number;
  started_at: number;
  seen_at: number;
}

interface StateRow {
  finalized_release: string;
  finalized_at: number | null;
  older_seen_at: number;
}

const STATE_COLUMNS = 'finalized_release, finalized_at, older_seen_at';
const READ_STATE = `SELECT ${STATE_COLUMNS} FROM upgrade_state WHERE id = 1`;
/** Registrations and finalizations take turns on this row (`UpgradeStore.heartbeat`). */
const LOCK_STATE = withRowLock(READ_STATE, 'UPDATE');

/** Sessions of release 0.1.0 (`RELEASE_BEFORE_REGISTRATION_APPLICATION_NAME`); SQLite cannot see other processes. */
const UNREGISTERED_SESSIONS = {
  sqlite: 'SELECT 0 AS n',
  postgres: `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tessera'`,
};

function toInstance(row: InstanceRow): InstanceRecord {
  return {
    id: row.id,
    release: row.release,
    commit: row.build_commit,
    host: row.host,
    pid: row.pid,
    startedAt: row.started_at,
    seenAt: row.seen_at,
  };
}

function toState(row: StateRow | undefined): UpgradeState {
  if (row === undefined) throw new Error('upgrade_state has no row: the schema is incomplete (run tessera migrate)');
  return { finalizedRelease: row.finalized_release, finalizedAt: row.finalized_at, olderSeenAt: row.older_seen_at };
}

async function readHeartbeat(tx: SqlRunner, seenSince: number, lock: boolean): Promise<Heartbeat> {
  const state = toState(await tx.get<StateRow>(lock ? LOCK_STATE : READ_STATE));
  const rows = await tx.all<InstanceRow>(
    'SELECT id, release, build_commit, host, pid, started_at, seen_at FROM instances WHERE seen_at >= :seenSince ORDER BY started_at, id',
    { seenSince },
  );
  const sessions = await tx.get<{ n: number }>(UNREGISTERED_SESSIONS);
  return { state, instances: rows.map(toInstance), unregisteredSessions: Number(sessions?.n ?? 0) };
}

/** The upgrade state now, or undefined if this role may not read it. */
export async function readUpgradeState(db: SqlRunner): Promise<UpgradeState | undefined> {
  try {
    return toState(await db.get<StateRow>(READ_STATE));
  } catch {
    return undefined;
  }
}

export function sqlUpgradeStore(db: SqlRunner, stateAtOpen: UpgradeState | undefined): UpgradeStore {
  return {
    stateAtOpen,
    async heartbeat(instance, seenSince, decide) {
      return db.transaction(async (tx) => {
        const before = await readHeartbeat(tx, seenSince, true);
        // Decided before this instance's row is written: a release too old to serve leaves none.
        const decision = decide(before);
        await tx.run(
          `INSERT INTO instances (id, release, build_commit, host, pid, started_at, seen_at)
           VALUES (:id, :release, :commit, :host, :pid, :startedAt, :seenAt)
           ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`,
          { ...instance },
        );
        if (decision === 'nothing') return readHeartbeat(tx, seenSince, false);
        if ('olderSeen' in decision) {
          await tx.run('UPDATE upgrade_state SET older_seen_at = :at WHERE id = 1', { at: instance.seenAt });
        } else {
          await tx.run('UPDATE upgrade_state SET finalized_release = :release, finalized_at = :at WHERE id = 1', {
            release: decision.finalize,
            at: instance.seenAt,
          });
        }
        return readHeartbeat(tx, seenSince, false);
      });
    },
    async read(seenSince) {
      return db.transaction((tx) => readHeartbeat(tx, seenSince, false));
    },
    async finalize(release, seenSince, now, decide) {
      return db.transaction(async (tx) => {
        decide(await readHeartbeat(tx, seenSince, true));
        await tx.run('UPDATE upgrade_state SET finalized_release = :release, finalized_at = :now WHERE id = 1', { release, now });
        return toState(await tx.get<StateRow>(READ_STATE));
      });
    },
    async leave(id, forgottenBefore) {
      await db.run('DELETE FROM instances WHERE id = :id OR seen_at < :forgottenBefore', { id, forgottenBefore });
    },
  };
}
