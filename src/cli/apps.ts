import { readFile, stat } from 'node:fs/promises';
import type { AppDescription } from 'tessera-tokens/internal/apps/app.js';
import { parseConfigurationChanges } from 'tessera-tokens/internal/apps/configuration.js';
import { ImportRefused, MAX_IMPORT_FILE_BYTES, type ImportOptions, type ImportSummary } from '../apps/import.js';
import type { SecretExposure } from '../apps/secret-exposure.js';
import { parseGraceSeconds } from '../apps/secret-rotation.js';
import type { CreatedApp, RotatedSecret } from '../apps/service.js';
import { OPERATOR } from '../request-context.js';
import type { Tessera } from '../tessera.js';
import { CommandFailed, flagValue, stringFlag, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const APPS_FLAGS: FlagSpec = {
  name: true,
  owner: true,
  'revoke-admin-tokens': false,
  grace: true,
  'dry-run': false,
  'skip-existing': false,
};

/** The problems of a refused import printed as text; the rest are counted (`--json` lists up to `MAX_LISTED_PROBLEMS` of them). */
export const SHOWN_IMPORT_PROBLEMS = 20;

const IMPORT_USAGE = 'usage: tessera apps import FILE [--dry-run] [--skip-existing] [--json]';
const CONFIGURE_USAGE =
  'usage: tessera apps configure APP_ID FIELD=VALUE… [--json] (e.g. anonymousAttestation=monitor basicAnonymous=false)';

/**
 * `FIELD=VALUE` of `tessera apps configure`: the value as JSON when it reads as JSON (`true`, `60`,
 * `null`, `["https://a.example"]`), as a string otherwise (`monitor`); the API's rules apply to both.
 */
function settingOf(argument: string): [string, unknown] {
  const equals = argument.indexOf('=');
  if (equals <= 0) throw new UsageError(CONFIGURE_USAGE);
  const text = argument.slice(equals + 1);
  try {
    return [argument.slice(0, equals), JSON.parse(text) as unknown];
  } catch {
    return [argument.slice(0, equals), text];
  }
}

/** `tessera apps <verb>`: the operator's provisioning ("the developer portal"). */
export async function runAppsCommand(tessera: Tessera, command: ParsedCommand, out: Output): Promise<void> {
  const [verb, appId, ...extra] = command.positionals;
  const name = stringFlag(command, 'name');
  const revokeAdminTokens = command.flags['revoke-admin-tokens'] === true;
  if (name !== undefined && verb !== 'create') throw new UsageError('--name is for tessera apps create');
  if (revokeAdminTokens && verb !== 'rotate-secret') throw new UsageError('--revoke-admin-tokens is for tessera apps rotate-secret');
  const grace = stringFlag(command, 'grace');
  if (grace !== undefined && verb !== 'rotate-secret') throw new UsageError('--grace is for tessera apps rotate-secret');
  if (grace !== undefined && revokeAdminTokens) {
    throw new UsageError('--grace and --revoke-admin-tokens do not go together: after a leak, the old secret must stop at once');
  }
  const importOptions: ImportOptions = { dryRun: command.flags['dry-run'] === true, skipExisting: command.flags['skip-existing'] === true };
  if ((importOptions.dryRun || importOptions.skipExisting) && verb !== 'import')
    throw new UsageError('--dry-run and --skip-existing are for tessera apps import');
  const owner = stringFlag(command, 'owner');
  if (owner !== undefined && verb !== 'create' && verb !== 'transfer')
    throw new UsageError('--owner is for tessera apps create and apps transfer');
  const needsAppId = () => {
    if (appId === undefined || extra.length > 0) throw new UsageError(`usage: tessera apps ${verb} APP_ID [--json]`);
    return appId;
  };
  switch (verb) {
    case 'create': {
      if (name === undefined || appId !== undefined)
        throw new UsageError('usage: tessera apps create --name NAME [--owner EMAIL] [--json]');
      if (owner === undefined) {
        const created = await tessera.apps.create(name);
        return out.result(created, () => describeCreated(created));
      }
      const created = await tessera.ownedApps.create(name, owner, OPERATOR);
      return out.result(created, () => [...describeCreated(created), `  Owner         ${created.owner.email}`]);
    }
    case 'transfer': {
      if (owner === undefined || appId === undefined || extra.length > 0)
        throw new UsageError('usage: tessera apps transfer APP_ID --owner EMAIL [--json]');
      const transfer = await tessera.members.setOwner(appId, owner, OPERATOR);
      const before =
        transfer.previousOwner === null ? 'the operator' : (transfer.previousOwner.email ?? `developer ${transfer.previousOwner.id}`);
      return out.result(
        {
          appId,
          owner: { id: transfer.owner.id, email: transfer.owner.email },
          previousOwner: transfer.previousOwner,
          changed: transfer.changed,
        },
        () =>
          transfer.changed
            ? `App ${appId} now belongs to ${transfer.owner.email} (before: ${before}, who is no longer a member).`
            : `App ${appId} belongs to ${transfer.owner.email} already.`,
      );
    }
    case 'list': {
      if (appId !== undefined) throw new UsageError('usage: tessera apps list [--json]');
      const apps = await tessera.apps.list();
      return out.result(apps, () => (apps.length === 0 ? 'No apps yet. Create one: tessera apps create --name NAME' : apps.map(oneLine)));
    }
    case 'show': {
      const app = await tessera.apps.show(needsAppId(), OPERATOR);
      const [browserExposures, memberships] = await Promise.all([
        tessera.appEvents.secretExposures(app.appId, OPERATOR),
        tessera.members.membersOf(app.appId, OPERATOR),
      ]);
      const members = memberships.map(({ email, role }) => ({ email, role }));
      return out.result({ ...app, members, browserExposures }, () => [
        ...describe(app, tessera.clock.now()),
        ...describeMembers(members),
        ...browserExposures.flatMap((exposure) => describeExposure(app.appId, exposure)),
      ]);
    }
    case 'rotate-secret': {
      const id = needsAppId();
      const graceSeconds = grace === undefined ? undefined : flagValue(() => parseGraceSeconds(grace));
      const rotated = await tessera.apps.rotateSecret(
        id,
        { revokeAdminTokens, ...(graceSeconds === undefined ? {} : { graceSeconds }) },
        OPERATOR,
      );
      return out.result(rotated, () => describeRotated(rotated, revokeAdminTokens));
    }
    case 'end-previous-secret': {
      const id = needsAppId();
      const ended = await tessera.apps.endPreviousSecret(id, OPERATOR);
      return out.result({ appId: id, ...ended }, () =>
        ended.endedPreviousSecretValidUntil === null
          ? `App ${id} has no previous ClientSecret that still works: nothing to end.`
          : `The previous ClientSecret of app ${id}, which would have worked until ${ended.endedPreviousSecretValidUntil}, is refused from now on. ` +
            'Tokens issued with it keep working until they expire; if it leaked, revoke them too: tessera tokens revoke-all ' +
            `${id} --kind admin`,
      );
    }
    case 'configure': {
      if (appId === undefined || extra.length === 0) throw new UsageError(CONFIGURE_USAGE);
      const changes = flagValue(() => parseConfigurationChanges(Object.fromEntries(extra.map(settingOf))));
      const app = await tessera.apps.configure(appId, changes, OPERATOR);
      return out.result(app, () => describe(app, tessera.clock.now()));
    }
    case 'delete': {
      const id = needsAppId();
      await tessera.apps.delete(id, OPERATOR);
      return out.result({ appId: id, deleted: true }, () => `Deleted app ${id} and all of its tokens.`);
    }
    case 'import': {
      const file = appId;
      if (file === undefined || extra.length > 0) throw new UsageError(IMPORT_USAGE);
      const started = performance.now();
      const summary = await importFile(tessera, file, importOptions);
      const seconds = (performance.now() - started) / 1000;
      return out.result(summary, () => describeImport(summary, file, seconds));
    }
    case 'export': {
      if (appId !== undefined) throw new UsageError('usage: tessera apps export [--json]');
      // JSON Lines either way: the shape `apps import` reads.
      for (const app of await tessera.appImports.exportApps()) out.line(app, () => JSON.stringify(app));
      return;
    }
    default:
      throw new UsageError(
        'usage: tessera apps create|list|show|rotate-secret|end-previous-secret|transfer|delete|import|export … [--json]',
      );
  }
}

/** `tessera apps import FILE`: the file read whole (it is checked whole before anything is written). */
async function importFile(tessera: Tessera, file: string, options: ImportOptions): Promise<ImportSummary> {
  let bytes: Buffer;
  try {
    const { size } = await stat(file);
    if (size > MAX_IMPORT_FILE_BYTES) {
      throw new CommandFailed('invalid_request', `${file} is ${size} bytes: an import reads at most ${MAX_IMPORT_FILE_BYTES}; split it.`);
    }
    bytes = await readFile(file);
  } catch (error) {
    if (error instanceof CommandFailed) throw error;
    throw new CommandFailed('FAILED', `Cannot read ${file}: ${(error as Error).message}`);
  }
  try {
    return await tessera.appImports.importApps(bytes, OPERATOR, options);
  } catch (error) {
    if (!(error instanceof ImportRefused)) throw error;
    // A person reads the first problems, which are often one mistake repeated, and how many more there are.
    const shown = error.problems.slice(0, SHOWN_IMPORT_PROBLEMS);
    const more = error.problems.length - shown.length + error.unlistedProblems;
    throw new CommandFailed('IMPORT_REFUSED', error.message, {
      lines: [
        ...shown.map((problem) => `line ${problem.line}: ${problem.message}`),
        ...(more === 0
          ? []
          : [
              `… and ${more} more problem(s); --json lists ${error.unlistedProblems === 0 ? 'every one' : `the first ${error.problems.length}`}.`,
            ]),
      ],
      details: { dryRun: error.dryRun, lines: error.lines, problems: error.problems, unlistedProblems: error.unlistedProblems },
    });
  }
}

function describeImport(summary: ImportSummary, file: string, seconds: number): string[] {
  const formats = [
    ...(summary.establishedFormat > 0 ? [`${summary.establishedFormat} with the established service's 8-character AppIDs`] : []),
    ...(summary.tesseraFormat > 0 ? [`${summary.tesseraFormat} with Tessera's 16-character AppIDs`] : []),
  ];
  const keys = formats.length === 0 ? '.' : `: ${formats.join(', ')}.`;
  const skipped = `${summary.skipped} skipped (in the store already with the same keys, and left as they are)`;
  if (summary.dryRun) {
    return [
      `Dry run of ${file}, checked in ${seconds.toFixed(1)} s; nothing was written. It would import ${summary.imported} app(s)${keys}`,
      `  ${summary.imported} to import, ${skipped}.`,
      `  ${summary.lines} line(s), ${summary.blankLines} blank; ${summary.owned} app(s) would be given an owner.`,
    ];
  }
  return [
    `Imported ${summary.imported} app(s) from ${file} in ${seconds.toFixed(1)} s, with the keys they had${keys}`,
    `  ${summary.imported} imported, ${skipped}.`,
    `  ${summary.lines} line(s), ${summary.blankLines} blank; ${summary.owned} app(s) given an owner.`,
    '  Their ClientSecrets are stored only as digests: `tessera apps export` writes every app without them.',
  ];
}

function describeCreated(app: CreatedApp): string[] {
  return [
    `Created app "${app.name}". The ClientSecret is shown only now: keep it on the server side.`,
    `  AppID         ${app.appId}`,
    `  AppKey        ${app.appKey}`,
    `  ClientID      ${app.clientId}`,
    `  ClientSecret  ${app.clientSecret}`,
  ];
}

function describeRotated(rotated: RotatedSecret, revokeAdminTokens: boolean): string[] {
  const previous = rotated.previousSecretValidUntil;
  return [
    previous === null
      ? `New ClientSecret of app ${rotated.appId} (shown once; the old one no longer works):`
      : `New ClientSecret of app ${rotated.appId} (shown once; the old one keeps working until ${previous}):`,
    `  ClientSecret  ${rotated.clientSecret}`,
    ...(previous === null
      ? []
      : [
          `Deploy it before then; \`tessera events ${rotated.appId} --type token.issued\` shows which secret each admin token was issued with.`,
        ]),
    ...(rotated.endedEarlierSecretValidUntil === null
      ? []
      : [
          `The secret an earlier rotation kept (until ${rotated.endedEarlierSecretValidUntil}) no longer works: only one previous secret is kept.`,
        ]),
    ...(revokeAdminTokens ? [`Revoked ${rotated.adminTokensRevoked} admin token(s) of the app.`] : []),
  ];
}

function oneLine(app: AppDescription): string {
  return `${app.appId}  ${app.createdAt}  ${app.name}`;
}

function describe(app: AppDescription, now: number): string[] {
  const config = app.configuration;
  const lifetime = (seconds: number | null) => (seconds === null ? 'no maximum' : `${seconds} s`);
  const previous = app.previousSecretValidUntil;
  const previousSecret = previous === null ? 'none' : Date.parse(previous) > now ? `works until ${previous}` : `stopped at ${previous}`;
  return [
    `App "${app.name}"`,
    `  AppID         ${app.appId}`,
    `  AppKey        ${app.appKey}`,
    `  ClientID      ${app.clientId}`,
    `  Admin id      ${app.adminId}`,
    `  Created       ${app.createdAt}`,
    `  Previous ClientSecret         ${previousSecret}`,
    `  Max admin token lifetime      ${lifetime(config.adminTokenMaxLifetimeSeconds)}`,
    `  Max anonymous token lifetime  ${lifetime(config.anonymousTokenMaxLifetimeSeconds)}`,
    `  Anonymous tokens need AppKey  ${config.requireAppKey ? 'yes' : 'no'}`,
    `  Allowed origins (CORS)        ${config.allowedOrigins.length === 0 ? 'none' : config.allowedOrigins.join(' ')}`,
    `  Anonymous attestation         ${config.anonymousAttestation}`,
    `  Basic anonymous access        ${config.basicAnonymous ? 'accepted' : 'refused'}`,
    `  Proof of work                 ${config.powAlgorithm}, cost ${config.powCost}, up to ${config.powMaxAttempts} attempts` +
      (config.powRisesAbovePerMinute === null ? '' : `, rising from ${config.powRisesAbovePerMinute} requests a minute`),
  ];
}

/** Who has the app in the portal: its owner (none: the operator's alone) and collaborators. */
function describeMembers(members: readonly { email: string; role: string }[]): string[] {
  const owner = members.find((member) => member.role === 'owner');
  const collaborators = members.filter((member) => member.role !== 'owner').map((member) => member.email);
  return [
    `  Owner                         ${owner?.email ?? "none (the operator's: tessera apps transfer APP_ID --owner EMAIL gives it one)"}`,
    `  Collaborators                 ${collaborators.length === 0 ? 'none' : collaborators.join(' ')}`,
  ];
}

/** The last time a ClientSecret of the app (its own, or a credential's) reached a browser, and what to do about it. */
function describeExposure(appId: string, exposure: SecretExposure): string[] {
  const { credential } = exposure;
  const where = `from ${exposure.origin === null ? 'a web page' : `a page of ${exposure.origin}`} (${exposure.clientAddress ?? 'unknown address'})`;
  const whose = credential === null ? 'ClientSecret' : `Credential ${credential.clientId} (${credential.name})`;
  const seen = `  ${whose} sent from a browser  ${exposure.lastExposedAt}, ${where}`;
  if (exposure.worksUntil !== null) {
    return [
      seen,
      `    rotated at ${exposure.rotatedAt!}, with a grace period: the leaked secret works until ${exposure.worksUntil}. End it now:`,
      credential === null
        ? `    tessera apps end-previous-secret ${appId}`
        : `    tessera credentials end-previous-secret ${appId} ${credential.clientId}`,
    ];
  }
  if (exposure.rotatedAt !== null) return [seen, `    ${exposure.revoked ? 'revoked' : 'rotated'} since, at ${exposure.rotatedAt}`];
  return [
    seen,
    '    The secret is in a web page, where anyone can read it. Move admin-token requests to server-side code, then',
    credential === null
      ? `    rotate it: tessera apps rotate-secret ${appId} --revoke-admin-tokens`
      : `    revoke the credential: tessera credentials revoke ${appId} ${credential.clientId}`,
  ];
}
