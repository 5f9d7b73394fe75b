import { compareReleases, currentBuild } from 'tessera-tokens/internal/release.js';
import type { Tessera } from '../tessera.js';
import { CAPABILITIES, type Capability } from '../upgrade/capabilities.js';
import { INSTANCE_SEEN_WITHIN_MS, olderReleasesServing, refuseFinalizeWhileOlderServe } from '../upgrade/registry.js';
import type { Heartbeat } from '../upgrade/store.js';
import { UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const UPGRADE_FLAGS: FlagSpec = {};

const USAGE = 'usage: tessera upgrade status|finalize [--json]';

/** What `tessera upgrade status` and `finalize` say. */
interface UpgradeStatus {
  release: string;
  finalizedRelease: string;
  finalizedAt: string | null;
  /** When an instance of an older release was last seen (ISO 8601). */
  olderSeenAt: string;
  /** Older releases serving now. */
  olderServing: string[];
  instances: { release: string; commit: string; host: string; pid: number; startedAt: string; seenAt: string }[];
  /** Database sessions of release 0.1.0, which registers nowhere (PostgreSQL). */
  unregisteredSessions: number;
  /** What waits for the store to be finalized for this release. */
  waiting: string[];
}

/**
 * `tessera upgrade status`: the release the store is finalized for, the instances serving on it by
 * release, and the capabilities that wait. `tessera upgrade finalize`: finalizes the store for this
 * release now, refused while an instance of an older release is seen.
 */
export async function runUpgradeCommand(tessera: Tessera, command: ParsedCommand, out: Output): Promise<void> {
  const [verb, ...extra] = command.positionals;
  if (extra.length > 0) throw new UsageError(USAGE);
  const build = currentBuild();
  const seenSince = () => tessera.clock.now() - INSTANCE_SEEN_WITHIN_MS;
  switch (verb) {
    case 'status': {
      const status = describeStatus(await tessera.store.upgrade.read(seenSince()));
      return out.result(status, () => statusLines(status));
    }
    case 'finalize': {
      const before = await tessera.store.upgrade.read(seenSince());
      if (compareReleases(before.state.finalizedRelease, build.version) >= 0) {
        const status = describeStatus(before);
        return out.result(status, () => [
          `The store is finalized for Tessera ${before.state.finalizedRelease} already.`,
          ...statusLines(status),
        ]);
      }
      await tessera.store.upgrade.finalize(build.version, seenSince(), tessera.clock.now(), (seen) =>
        refuseFinalizeWhileOlderServe(seen, build),
      );
      const status = describeStatus(await tessera.store.upgrade.read(seenSince()));
      return out.result(status, () => [
        `The store is finalized for Tessera ${build.version}: what an older release would misread is available, and no older release may serve on it again.`,
        ...statusLines(status),
      ]);
    }
    default:
      throw new UsageError(USAGE);
  }
}

function describeStatus(seen: Heartbeat): UpgradeStatus {
  const build = currentBuild();
  const iso = (at: number) => new Date(at).toISOString();
  return {
    release: build.version,
    finalizedRelease: seen.state.finalizedRelease,
    finalizedAt: seen.state.finalizedAt === null ? null : iso(seen.state.finalizedAt),
    olderSeenAt: iso(seen.state.olderSeenAt),
    olderServing: olderReleasesServing(seen, build),
    instances: seen.instances.map(({ release, commit, host, pid, startedAt, seenAt }) => ({
      release,
      commit,
      host,
      pid,
      startedAt: iso(startedAt),
      seenAt: iso(seenAt),
    })),
    unregisteredSessions: seen.unregisteredSessions,
    waiting: (Object.keys(CAPABILITIES) as Capability[])
      .filter((capability) => compareReleases(seen.state.finalizedRelease, CAPABILITIES[capability].since) < 0)
      .map((capability) => CAPABILITIES[capability].name),
  };
}

function statusLines(status: UpgradeStatus): string[] {
  const lines = [`Finalized for: ${status.finalizedRelease}${status.finalizedAt === null ? '' : ` (${status.finalizedAt})`}`];
  lines.push(`Older releases serving: ${status.olderServing.length === 0 ? 'none' : status.olderServing.join(', ')}`);
  lines.push(`Waiting for finalization: ${status.waiting.length === 0 ? 'nothing' : status.waiting.join('; ')}`);
  const none = status.instances.length === 0 && status.unregisteredSessions === 0;
  lines.push(`Instances seen in the last ${INSTANCE_SEEN_WITHIN_MS / 1000} s:${none ? ' none' : ''}`);
  for (const instance of status.instances) {
    lines.push(
      `  ${instance.release.padEnd(8)} ${instance.commit.padEnd(14)} ${instance.host} pid ${instance.pid}, since ${instance.startedAt}`,
    );
  }
  if (status.unregisteredSessions > 0) lines.push(`  0.1.0    ${status.unregisteredSessions} database session(s) named "tessera"`);
  return lines;
}
