/** An instance serving on the store, as it says each heartbeat (`InstanceRegistry`). */
export interface InstanceRecord {
  /** Random, per process. */
  id: string;
  release: string;
  commit: string;
  host: string;
  pid: number;
  /** UNIX ms. */
  startedAt: number;
  /** UNIX ms: its last heartbeat. */
  seenAt: number;
}

/** The store's upgrade state: the release every instance's capabilities were finalized for, and when an older one was last seen. */
export interface UpgradeState {
  finalizedRelease: string;
  /** UNIX ms, or null for a store finalized by its first migration. */
  finalizedAt: number | null;
  /** UNIX ms: the last heartbeat that saw an instance of a release older than the heartbeat's own. */
  olderSeenAt: number;
}

/** What a heartbeat saw, in the transaction that recorded it. */
export interface Heartbeat {
  state: UpgradeState;
  /** The instances seen since `seenSince`, this one among them. */
  instances: InstanceRecord[];
  /** Database sessions of release 0.1.0, which registers nowhere (PostgreSQL only; 0 on SQLite). */
  unregisteredSessions: number;
}

/** A heartbeat's decision, taken in its transaction with the state row locked: what to record. */
export type HeartbeatDecision = { olderSeen: true } | { finalize: string } | 'nothing';

export interface UpgradeStore {
  /** The state as the store was opened (after its migrations); undefined if this role may not read it (a verifier's). */
  readonly stateAtOpen: UpgradeState | undefined;
  /**
   * Records `instance` (inserted, or its `seenAt` updated), reads what serves now, and records what
   * `decide` makes of it, in one transaction that holds the state row: an instance registering and
   * another finalizing take turns, so that no instance of an older release starts serving unseen
   * by a finalization. Throws what `decide` throws (an instance too old to serve).
   */
  heartbeat(instance: InstanceRecord, seenSince: number, decide: (seen: Heartbeat) => HeartbeatDecision): Promise<Heartbeat>;
  /** The state and the instances seen since `seenSince`, read only (`tessera upgrade status`). */
  read(seenSince: number): Promise<Heartbeat>;
  /** Finalizes for `release` if `decide`, given what serves now with the state row locked, says so; the state after. */
  finalize(release: string, seenSince: number, now: number, decide: (seen: Heartbeat) => void): Promise<UpgradeState>;
  /** Removes an instance's row (it stops), and the rows of instances not seen since `forgottenBefore`. */
  leave(id: string, forgottenBefore: number): Promise<void>;
}
