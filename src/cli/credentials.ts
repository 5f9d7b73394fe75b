import type { CreatedCredential, RotatedCredential } from '../apps/credential-service.js';
import { parseGraceSeconds } from '../apps/secret-rotation.js';
import type { CredentialDescription } from 'tessera-tokens/internal/credentials/credential.js';
import { OPERATOR } from '../request-context.js';
import type { Tessera } from '../tessera.js';
import { flagValue, listFlag, stringFlag, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const CREDENTIALS_FLAGS: FlagSpec = {
  name: true,
  scope: 'repeatable',
  'expires-at': true,
  'allow-from': 'repeatable',
  format: true,
  grace: true,
};

const USAGE =
  'usage: tessera credentials create APP_ID --name NAME --scope SCOPE… [--expires-at RFC3339] [--allow-from CIDR…] [--format opaque|jwt] [--json]\n' +
  '       tessera credentials list APP_ID [--json]\n' +
  '       tessera credentials rotate APP_ID CLIENT_ID [--grace SECONDS] [--json]\n' +
  '       tessera credentials end-previous-secret APP_ID CLIENT_ID [--json]\n' +
  '       tessera credentials revoke APP_ID CLIENT_ID [--json]';

/** `tessera credentials <verb>`: an app's further credentials, each with its scopes (docs/security.md, "Least privilege"). */
export async function runCredentialsCommand(tessera: Tessera, command: ParsedCommand, out: Output): Promise<void> {
  const [verb, appId, clientId, ...extra] = command.positionals;
  if (appId === undefined || extra.length > 0) throw new UsageError(USAGE);
  const forCreate = ['name', 'scope', 'expires-at', 'allow-from', 'format'].filter((flag) => command.flags[flag] !== undefined);
  if (verb !== 'create' && forCreate.length > 0) throw new UsageError(`--${forCreate[0]} is for tessera credentials create`);
  const grace = stringFlag(command, 'grace');
  if (grace !== undefined && verb !== 'rotate') throw new UsageError('--grace is for tessera credentials rotate');
  switch (verb) {
    case 'create': {
      if (clientId !== undefined) throw new UsageError(USAGE);
      const created = await tessera.credentials.create(
        appId,
        {
          name: stringFlag(command, 'name'),
          scopes: listFlag(command, 'scope'),
          expiresAt: stringFlag(command, 'expires-at'),
          allowFrom: listFlag(command, 'allow-from'),
          accessTokenFormat: stringFlag(command, 'format'),
        },
        OPERATOR,
      );
      return out.result(created, () => describeCreated(created));
    }
    case 'list': {
      if (clientId !== undefined) throw new UsageError(USAGE);
      const credentials = await tessera.credentials.list(appId, OPERATOR);
      return out.result(credentials, () =>
        credentials.length === 0 ? `App ${appId} has no credentials besides its own ClientID.` : credentials.flatMap(describeListed),
      );
    }
    case 'rotate': {
      if (clientId === undefined) throw new UsageError(USAGE);
      const graceSeconds = grace === undefined ? undefined : flagValue(() => parseGraceSeconds(grace));
      const rotated = await tessera.credentials.rotate(appId, clientId, graceSeconds === undefined ? {} : { graceSeconds }, OPERATOR);
      return out.result(rotated, () => describeRotated(rotated));
    }
    case 'end-previous-secret': {
      if (clientId === undefined) throw new UsageError(USAGE);
      const ended = await tessera.credentials.endPreviousSecret(appId, clientId, OPERATOR);
      return out.result(ended, () =>
        ended.endedPreviousSecretValidUntil === null
          ? `Credential ${clientId} has no previous secret that still works: nothing to end.`
          : `The previous secret of credential ${clientId}, which would have worked until ${ended.endedPreviousSecretValidUntil}, is refused from now on.`,
      );
    }
    case 'revoke': {
      if (clientId === undefined) throw new UsageError(USAGE);
      const revoked = await tessera.credentials.revoke(appId, clientId, OPERATOR);
      return out.result(revoked, () =>
        [
          `Revoked credential ${clientId} of app ${appId}: its secret and its ${revoked.tokensRevoked} admin token(s) are refused from now on.`,
          ...revoked.credentialsRevoked.map(
            (made) =>
              `Revoked with it, since its admin tokens made it: credential ${made.clientId} (${made.name}) and its ${made.tokensRevoked} admin token(s).`,
          ),
        ].join('\n'),
      );
    }
    default:
      throw new UsageError(USAGE);
  }
}

function describeCreated(created: CreatedCredential): string[] {
  return [
    `Created credential "${created.name}". Its ClientSecret is shown this once: keep it in your server's secret store.`,
    `  ClientID      ${created.clientId}`,
    `  ClientSecret  ${created.clientSecret}`,
    ...details(created),
  ];
}

function describeListed(credential: CredentialDescription): string[] {
  return [`${credential.clientId}  ${credential.name}`, ...details(credential)];
}

function details(credential: CredentialDescription): string[] {
  return [
    `  Scopes        ${credential.scopes.join(' ')}`,
    `  Expires       ${credential.expiresAt ?? 'never'}`,
    `  Allowed from  ${credential.allowFrom.length === 0 ? 'any address' : credential.allowFrom.join(' ')}`,
    `  Token format  ${credential.accessTokenFormat ?? "the app's"}`,
    `  Created       ${credential.createdAt} by ${credential.createdBy}`,
    `  Last used     ${credential.lastUsedAt ?? 'never'}`,
  ];
}

function describeRotated(rotated: RotatedCredential): string[] {
  return [
    `New ClientSecret for credential ${rotated.clientId}, shown this once:`,
    `  ClientSecret  ${rotated.clientSecret}`,
    rotated.previousSecretValidUntil === null
      ? 'The old secret stopped working at once.'
      : `The old secret works until ${rotated.previousSecretValidUntil}.`,
  ];
}
