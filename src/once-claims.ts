import { formSentAlready } from 'tessera-tokens/internal/error-catalogue.js';

/**
 * A single-use value sent with a change that must not be made twice: the portal's forms whose
 * answer shows a secret once (`src/portal/single-use-forms.ts`), which a reload, a resend while the first is
 * pending or a retrying proxy may send again. The service claims it in the change's own
 * transaction (`claimOnce`): a value claimed before makes the whole change do nothing, so of two
 * sends in flight together exactly one takes effect.
 */
export interface OnceClaim {
  value: string;
  /** Until when (UNIX ms) the claim is kept: past it, the value is refused by the form anyway. */
  keepUntil: number;
}

/** How long a form's once value may be used after it is issued, and a claim of it kept. */
export const ONCE_LIFETIME_MS = 3600_000;

export function onceClaim(value: string, now: number): OnceClaim {
  return { value, keepUntil: now + ONCE_LIFETIME_MS };
}

/** The claims' storage seam: claimed in the transaction of the change they go with, removed by housekeeping. */
export interface OnceClaimStore {
  /** Claims the value: true, or undefined (nothing written) if it was claimed before. */
  claim(once: OnceClaim): Promise<true | undefined>;
  /** Removes up to `batch` claims kept until `now` or earlier; how many it removed. */
  deleteExpired(now: number, batch: number): Promise<number>;
}

/**
 * Claims `once`, when there is one, in the transaction `claims` is bound to: `CONFLICT`, the form
 * sent already (`formSentAlready`), if it was claimed before, which rolls back the whole change.
 */
export async function claimOnce(claims: OnceClaimStore, once: OnceClaim | undefined): Promise<void> {
  if (once !== undefined && (await claims.claim(once)) === undefined) throw formSentAlready();
}
