import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { compareReleases, type BuildInfo } from 'tessera-tokens/internal/release.js';
import type { UpgradeState } from './store.js';

/**
 * What this release can do that an older release sharing the store during a rolling upgrade would
 * misread or not enforce: each waits until the store is finalized for the release that brought it
 * (no older release seen for a while, or `tessera upgrade finalize`), as a cluster version or a
 * feature gate does. What it would let that older release do, for the 409's message.
 */
export const CAPABILITIES = {
  scopedCredentials: {
    since: '0.2.0',
    name: 'Credentials with scopes',
    risk: 'it would take the admin tokens of a credential for full admin tokens of the app',
  },
  secretGracePeriods: {
    since: '0.2.0',
    name: 'A rotation with a grace period',
    risk: 'it would refuse the previous ClientSecret at once',
  },
  selfVerifyingAnonymousTokens: {
    since: '0.2.0',
    name: 'Self-verifying anonymous tokens',
    risk: 'it would refuse them, and answer their revocation without revoking them',
  },
  anonymousAttestation: {
    since: '0.3.0',
    name: 'Attestation of anonymous token requests, and turning Basic anonymous access off,',
    risk: 'it would give anonymous tokens without an attestation, accept Basic anonymous access, and refuse the tokens that carry an attestation',
  },
  jwtAccessTokens: {
    since: '0.4.0',
    name: 'JWT access tokens',
    risk: 'it would refuse them, and issue opaque tokens to the app',
  },
  powSerialClaims: {
    since: '0.4.0',
    name: 'Proofs of work claimed by their challenge\u2019s serial',
    risk: 'it would claim such a proof by its signature instead, and accept it a second time',
  },
  webhooks: {
    since: '0.4.0',
    name: 'Webhooks, and credentials with webhooks:manage,',
    risk: 'it would take webhooks:manage for a scope of the app\u2019s own, which a collaborator may give',
  },
} as const;

export type Capability = keyof typeof CAPABILITIES;

/**
 * Which capabilities the store's upgrade state allows, known in memory (`allows`, for the hot
 * paths) and read anew before a refusal (`require`, for the rare changes that need one).
 */
export class Capabilities {
  #state: UpgradeState | undefined;
  /** What the state allows, worked out when it is read: `allows` is on the token endpoint's path. */
  #allowed = new Set<Capability>();

  constructor(
    initialState: UpgradeState | undefined,
    private readonly build: BuildInfo,
    private readonly readState: () => Promise<UpgradeState>,
    /** How long no older release must have been seen before a heartbeat finalizes by itself. */
    private readonly finalizeAfterMs: number,
  ) {
    this.update(initialState);
  }

  /** The state last read; undefined before the first. */
  get state(): UpgradeState | undefined {
    return this.#state;
  }

  update(state: UpgradeState | undefined): void {
    this.#state = state;
    this.#allowed = new Set(
      (Object.keys(CAPABILITIES) as Capability[]).filter(
        (capability) => state !== undefined && compareReleases(state.finalizedRelease, CAPABILITIES[capability].since) >= 0,
      ),
    );
  }

  /** Whether the state last read allows `capability`; false before any was read. */
  allows(capability: Capability): boolean {
    return this.#allowed.has(capability);
  }

  /** Resolves if the store allows `capability` now; `409 CONFLICT` saying what it waits for otherwise. */
  async require(capability: Capability): Promise<void> {
    if (this.allows(capability)) return;
    this.update(await this.readState());
    if (this.allows(capability)) return;
    throw this.#waiting(capability, this.#state!);
  }

  #waiting(capability: Capability, state: UpgradeState): TesseraError {
    const { since, name, risk } = CAPABILITIES[capability];
    const minutes = Math.max(1, Math.round(this.finalizeAfterMs / 60_000));
    return new TesseraError(
      'CONFLICT',
      `${name} wait until every instance of this service runs Tessera ${since} or later: the store is finalized for ` +
        `${state.finalizedRelease}, and an instance of an older release was last seen ${new Date(state.olderSeenAt).toISOString()} ` +
        `(${risk}). They are available once no older release has been seen for ${minutes} minute${minutes === 1 ? '' : 's'}, ` +
        `or once the operator runs \`tessera upgrade finalize\` (docs/deployment.md, "Upgrading"). This is Tessera ${this.build.version}.`,
    );
  }
}
