import type { AppDescription } from '../apps/app.js';
import type { CreatedApp } from '../apps/service.js';
import { TesseraError } from '../errors.js';
import { OPERATOR } from '../request-context.js';
import type { Tessera } from '../tessera.js';
import { stringFlag, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const APPS_FLAGS: FlagSpec = { name: true, owner: true, 'revoke-admin-tokens': false };

/** `tessera apps <verb>`: the operator's provisioning ("the developer portal"). */
export async function runAppsCommand(tessera: Tessera, command: ParsedCommand, out: Output): Promise<void> {
  const [verb, appId, ...extra] = command.positionals;
  const name = stringFlag(command, 'name');
  const revokeAdminTokens = command.flags['revoke-admin-tokens'] === true;
  if (name !== undefined && verb !== 'create') throw new UsageError('--name is for tessera apps create');
  if (revokeAdminTokens && verb !== 'rotate-secret') throw new UsageError('--revoke-admin-tokens is for tessera apps rotate-secret');
  const owner = stringFlag(command, 'owner');
  if (owner !== undefined && verb !== 'create' && verb !== 'transfer') throw new UsageError('--owner is for tessera apps create and apps transfer');
  const needsAppId = () => {
    if (appId === undefined || extra.length > 0) throw new UsageError(`usage: tessera apps ${verb} APP_ID [--json]`);
    return appId;
  };
  switch (verb) {
    case 'create': {
      if (name === undefined || appId !== undefined) throw new UsageError('usage: tessera apps create --name NAME [--owner EMAIL] [--json]');
      if (owner === undefined) {
        const created = await tessera.apps.create(name);
        return out.result(created, () => describeCreated(created));
      }
      const created = await createOwned(tessera, name, owner);
      return out.result(created, () => [...describeCreated(created), `  Owner         ${created.owner.email}`]);
    }
    case 'transfer': {
      if (owner === undefined || appId === undefined || extra.length > 0) throw new UsageError('usage: tessera apps transfer APP_ID --owner EMAIL [--json]');
      const transfer = await tessera.members.setOwner(appId, owner, OPERATOR);
      const before = transfer.previousOwner === null ? 'the operator' : (transfer.previousOwner.email ?? `developer ${transfer.previousOwner.id}`);
      return out.result(
        { appId, owner: { id: transfer.owner.id, email: transfer.owner.email }, previousOwner: transfer.previousOwner, changed: transfer.changed },
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
      const app = await tessera.apps.show(needsAppId());
      return out.result(app, () => describe(app));
    }
    case 'rotate-secret': {
      const rotated = await tessera.apps.rotateSecret(needsAppId(), { revokeAdminTokens });
      return out.result(rotated, () => [
        `New ClientSecret of app ${rotated.appId} (shown once; the old one no longer works):`,
        `  ClientSecret  ${rotated.clientSecret}`,
        ...(revokeAdminTokens ? [`Revoked ${rotated.adminTokensRevoked} admin token(s) of the app.`] : []),
      ]);
    }
    case 'delete': {
      const id = needsAppId();
      await tessera.apps.delete(id);
      return out.result({ appId: id, deleted: true }, () => `Deleted app ${id} and all of its tokens.`);
    }
    default:
      throw new UsageError('usage: tessera apps create|list|show|rotate-secret|transfer|delete … [--json]');
  }
}

/**
 * An app with an owner from the start. The owner is checked first, so that a wrong email creates
 * nothing; should it be disabled or deleted between the check and the write, the app is deleted again.
 */
async function createOwned(tessera: Tessera, name: string, ownerEmail: string): Promise<CreatedApp & { owner: { id: string; email: string } }> {
  const developer = await tessera.developers.find(ownerEmail);
  if (developer.disabledAt !== null) throw new TesseraError('invalid_request', 'This developer is disabled: choose another one.');
  const created = await tessera.apps.create(name);
  try {
    const { owner } = await tessera.members.setOwner(created.appId, developer.email, OPERATOR);
    return { ...created, owner: { id: owner.id, email: owner.email } };
  } catch (error) {
    await tessera.apps.delete(created.appId).catch(() => {});
    throw error;
  }
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

function oneLine(app: AppDescription): string {
  return `${app.appId}  ${app.createdAt}  ${app.name}`;
}

function describe(app: AppDescription): string[] {
  const config = app.configuration;
  const lifetime = (seconds: number | null) => (seconds === null ? 'no maximum' : `${seconds} s`);
  return [
    `App "${app.name}"`,
    `  AppID         ${app.appId}`,
    `  AppKey        ${app.appKey}`,
    `  ClientID      ${app.clientId}`,
    `  Admin id      ${app.adminId}`,
    `  Created       ${app.createdAt}`,
    `  Max admin token lifetime      ${lifetime(config.adminTokenMaxLifetimeSeconds)}`,
    `  Max anonymous token lifetime  ${lifetime(config.anonymousTokenMaxLifetimeSeconds)}`,
    `  Anonymous tokens need AppKey  ${config.requireAppKey ? 'yes' : 'no'}`,
  ];
}
