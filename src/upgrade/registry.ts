import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { isServiceUnavailable, reasonOf } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { compareReleases, finalizedForLaterRelease, SchemaRefused, type BuildInfo } from 'tessera-tokens/internal/release.js';
import type { Capabilities } from './capabilities.js';
import type { Heartbeat, HeartbeatDecision, InstanceRecord, UpgradeStore } from './store.js';

/** An instance not heard from for this long is taken to have stopped (a crash leaves its row). */
export const INSTANCE_SEEN_WITHIN_MS = 30_000;
/** Rows of instances not heard from for a day are removed. */
const INSTANCE_FORGOTTEN_AFTER_MS = 24 * 3_600_000;
/** How long no older release must have been seen before the store is finalized by itself (UPGRADE_FINALIZE_AFTER_SECONDS). */
export const DEFAULT_FINALIZE_AFTER_MS = 600_000;

/** How often an instance says it runs: often enough to be seen within `INSTANCE_SEEN_WITHIN_MS`, and to finalize soon after `finalizeAfterMs`. */
export function heartbeatIntervalMs(finalizeAfterMs: number): number {
  return Math.min(10_000, Math.max(200, Math.floor(finalizeAfterMs / 4)));
}

/** What serves beside `build` that is older: registered instances' releases, and release 0.1.0's sessions. */
export function olderReleasesServing(seen: Heartbeat, build: BuildInfo): string[] {
  const older = new Set(seen.instances.filter((instance) => compareReleases(instance.release, build.version) < 0).map((i) => i.release));
  if (seen.unregisteredSessions > 0) older.add('0.1.0');
  return [...older].sort(compareReleases);
}

/**
 * What a heartbeat of `build` records: that an older release still serves; the store finalized for
 * `build`, when none has been seen for `finalizeAfterMs`; or nothing. Throws `SchemaRefused` if
 * the store was finalized for a later release, whose data `build` would misread.
 */
export function heartbeatDecision(seen: Heartbeat, build: BuildInfo, now: number, finalizeAfterMs: number): HeartbeatDecision {
  const { finalizedRelease, olderSeenAt } = seen.state;
  if (compareReleases(finalizedRelease, build.version) > 0) {
    throw finalizedForLaterRelease(finalizedRelease, build.version);
  }
  if (olderReleasesServing(seen, build).length > 0) return { olderSeen: true };
  if (compareReleases(finalizedRelease, build.version) < 0 && now - olderSeenAt >= finalizeAfterMs) return { finalize: build.version };
  return 'nothing';
}

/** `tessera upgrade finalize`'s check: refused while an instance of an older release is seen. */
export function refuseFinalizeWhileOlderServe(seen: Heartbeat, build: BuildInfo): void {
  const older = olderReleasesServing(seen, build);
  if (older.length === 0) return;
  const instances = seen.instances.filter((instance) => older.includes(instance.release)).map((i) => `${i.host} pid ${i.pid}`);
  const sessions = seen.unregisteredSessions > 0 ? [`${seen.unregisteredSessions} database session(s) named "tessera"`] : [];
  throw new TesseraError(
    'CONFLICT',
    `Not finalized: release${older.length === 1 ? '' : 's'} ${older.join(', ')} still serve${older.length === 1 ? 's' : ''} on this database ` +
      `(${[...instances, ...sessions].join('; ')}). Upgrade or stop ${older.length === 1 ? 'it' : 'them'} first: finalizing lets this release ` +
      'write what an older one would misread.',
  );
}

export interface InstanceRegistryOptions {
  finalizeAfterMs: number;
  /** Told of a heartbeat that failed (the database away): the next one tries again. */
  onWarning: (message: string, error: unknown) => void;
  /** Told when the store was finalized for a later release while this instance ran: it must stop serving. */
  onRefused: (error: SchemaRefused) => void;
  /** Told when a heartbeat succeeds after failing. */
  onRecovered: (message: string) => void;
  /** Told when this instance finalized the store by itself. */
  onFinalized: (release: string) => void;
}

/**
 * Says, every few seconds, that this instance serves, with its release: what lets instances of a
 * later release hold back the capabilities it would misread, and finalize once none has been seen
 * for a while (`heartbeatDecision`). Keeps `Capabilities` up to date with the store's state.
 */
export class InstanceRegistry {
  readonly #instance: InstanceRecord;
  #timer: NodeJS.Timeout | undefined;
  #beating: Promise<void> | undefined;
  #stopped = false;
  /** Whether the last heartbeat failed: a failing heartbeat is said once, and its recovery once. */
  #failing = false;

  constructor(
    private readonly store: UpgradeStore,
    private readonly capabilities: Capabilities,
    private readonly clock: Clock,
    private readonly build: BuildInfo,
    private readonly options: InstanceRegistryOptions,
  ) {
    const now = clock.now();
    this.#instance = {
      id: randomUUID(),
      release: build.version,
      commit: build.commit,
      host: hostname(),
      pid: process.pid,
      startedAt: now,
      seenAt: now,
    };
  }

  /** Registers this instance; throws `SchemaRefused` if the store was finalized for a later release. Then beats until `stop`. */
  async start(): Promise<void> {
    await this.#beat();
    const interval = heartbeatIntervalMs(this.options.finalizeAfterMs);
    this.#timer = setInterval(() => {
      this.#beating ??= this.#beat()
        .then(() => {
          if (!this.#failing) return;
          this.#failing = false;
          this.options.onRecovered('this instance says again that it serves (the upgrade heartbeat)');
        })
        .catch((error: unknown) => {
          if (error instanceof SchemaRefused) return this.options.onRefused(error);
          if (this.#failing) return;
          this.#failing = true;
          // With the database away the error is a 503 whose stack says nothing: its reason says it all.
          const unavailable = isServiceUnavailable(error);
          this.options.onWarning(
            `this instance cannot say it serves (the upgrade heartbeat)${unavailable ? `: ${reasonOf(error)}` : ''}; it tries again ` +
              `every ${heartbeatIntervalMs(this.options.finalizeAfterMs) / 1000} s, and a line says when it succeeds`,
            unavailable ? undefined : error,
          );
        })
        .finally(() => (this.#beating = undefined));
    }, interval);
    this.#timer.unref();
  }

  /**
   * Stops beating and removes this instance's row; resolves whether it was removed (not when the
   * database cannot be reached: the row then ages out, `INSTANCE_SEEN_WITHIN_MS`).
   */
  async stop(): Promise<boolean> {
    if (this.#stopped) return false;
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#beating;
    return this.store.leave(this.#instance.id, this.clock.now() - INSTANCE_FORGOTTEN_AFTER_MS).then(
      () => true,
      () => false,
    );
  }

  async #beat(): Promise<void> {
    const now = this.clock.now();
    const instance = { ...this.#instance, seenAt: now };
    let finalized: string | undefined;
    const seen = await this.store.heartbeat(instance, now - INSTANCE_SEEN_WITHIN_MS, (before) => {
      const decision = heartbeatDecision(before, this.build, now, this.options.finalizeAfterMs);
      if (typeof decision === 'object' && 'finalize' in decision) finalized = decision.finalize;
      return decision;
    });
    this.capabilities.update(seen.state);
    if (finalized !== undefined) this.options.onFinalized(finalized);
  }
}
