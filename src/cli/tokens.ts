import { OPERATOR } from '../request-context.js';
import type { Tessera } from '../tessera.js';
import { revocationKind } from '../apps/revoke-all.js';
import { describeAppRevocation } from '../tokens/revocation.js';
import { stringFlag, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const TOKENS_FLAGS: FlagSpec = { kind: true };

const USAGE = 'usage: tessera tokens revoke-all APP_ID --kind admin|anonymous|all [--json]';

/**
 * `tessera tokens revoke-all APP_ID --kind KIND`: revokes every token of an app, or of one kind. The
 * kind is required and spelled out, as in `DELETE …/tokens`: a mistyped or missing one revokes nothing.
 */
export async function runTokensCommand(tessera: Tessera, command: ParsedCommand, out: Output): Promise<void> {
  const [verb, appId, ...extra] = command.positionals;
  if (verb !== 'revoke-all' || appId === undefined || extra.length > 0) throw new UsageError(USAGE);
  const kind = revocationKind(stringFlag(command, 'kind'));
  if (kind === undefined) throw new UsageError(USAGE);
  await tessera.apps.show(appId, OPERATOR); // APP_NOT_FOUND for an unknown app
  const revocation = await tessera.revoker.revokeAll(appId, kind, OPERATOR);
  const answer = describeAppRevocation(appId, kind, revocation);
  // Anonymous tokens are not stored, so a revoke-all of them counts none; the stored ones it removed
  // anyway (issued before anonymous tokens were self-verifying) are said only when there are any.
  const stored = kind !== 'admin' && revocation.revoked > 0 ? ` Stored tokens removed: ${revocation.revoked}.` : '';
  out.result(answer, () => `${answer.message}${stored}`);
}
