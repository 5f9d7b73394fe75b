import { readFileSync } from 'node:fs';
import { parsePlayIntegritySettings, type PlayIntegrityDescription } from '../attestation/android.js';
import { parseAppAttestSettings, type AppAttestDescription } from '../attestation/apple.js';
import type { DebugTokenDescription } from '../attestation/debug-tokens.js';
import { OPERATOR } from '../request-context.js';
import type { Tessera } from '../tessera.js';
import { flagValue, stringFlag, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const ATTESTATION_FLAGS: FlagSpec = {
  name: true,
  'package-name': true,
  'decryption-key-file': true,
  'verification-key-file': true,
  'team-id': true,
  'bundle-id': true,
  environment: true,
};

const USAGE =
  'usage: tessera attestation debug-token create APP_ID --name NAME [--json]\n' +
  '       tessera attestation debug-token list APP_ID [--json]\n' +
  '       tessera attestation debug-token revoke APP_ID DEBUG_TOKEN_ID [--json]\n' +
  '       tessera attestation android set APP_ID --package-name NAME --decryption-key-file FILE --verification-key-file FILE [--json]\n' +
  '       tessera attestation android show APP_ID [--json]\n' +
  '       tessera attestation android remove APP_ID [--json]\n' +
  '       tessera attestation apple set APP_ID --team-id TEAM_ID --bundle-id BUNDLE_ID [--environment production|development] [--json]\n' +
  '       tessera attestation apple show APP_ID [--json]\n' +
  '       tessera attestation apple remove APP_ID [--json]';

/** `tessera attestation debug-token <verb>`: the debug tokens that attest an app's anonymous token requests from CI and emulators. */
export async function runAttestationCommand(tessera: Tessera, command: ParsedCommand, out: Output): Promise<void> {
  const [noun, verb, appId, id, ...extra] = command.positionals;
  if (noun === 'android' && appId !== undefined && id === undefined) return runAndroid(tessera, verb, appId, command, out);
  if (noun === 'apple' && appId !== undefined && id === undefined) return runApple(tessera, verb, appId, command, out);
  if (noun !== 'debug-token' || appId === undefined || extra.length > 0) throw new UsageError(USAGE);
  const name = stringFlag(command, 'name');
  if (name !== undefined && verb !== 'create') throw new UsageError('--name is for tessera attestation debug-token create');
  const { debugTokens } = tessera.attestation;
  switch (verb) {
    case 'create': {
      if (name === undefined || id !== undefined) throw new UsageError(USAGE);
      const created = await debugTokens.create(appId, name, OPERATOR);
      return out.result(created, () => [
        `Debug token "${created.name}" (${created.id}) of app ${appId}:`,
        `  ${created.token}`,
        'Shown this once. Where the app runs in CI or an emulator, send it with anonymous token requests as',
        `  X-Tessera-Attestation: debug.${created.token}`,
        `Revoke it with: tessera attestation debug-token revoke ${appId} ${created.id}`,
      ]);
    }
    case 'list': {
      if (id !== undefined) throw new UsageError(USAGE);
      const listed = await debugTokens.list(appId, OPERATOR);
      return out.result(listed, () => (listed.length === 0 ? `App ${appId} has no debug tokens.` : listed.map(oneLine)));
    }
    case 'revoke': {
      if (id === undefined) throw new UsageError(USAGE);
      const revoked = await debugTokens.revoke(appId, id, OPERATOR);
      return out.result(revoked, () => `Revoked debug token "${revoked.name}" (${revoked.id}): it attests nothing from now on.`);
    }
    default:
      throw new UsageError(USAGE);
  }
}

/** `tessera attestation android …`: the app's Play Integrity settings, the keys read from the files the Play Console gives (never from the command line). */
async function runAndroid(tessera: Tessera, verb: string | undefined, appId: string, command: ParsedCommand, out: Output): Promise<void> {
  const { playIntegrity } = tessera.attestation;
  const describe = (settings: PlayIntegrityDescription) => [
    `Play Integrity of app ${appId}:`,
    `  Package name               ${settings.packageName}`,
    `  Decryption key             ${settings.decryptionKeyFingerprint} (fingerprint)`,
    `  Verification key           ${settings.verificationKeyFingerprint} (fingerprint)`,
    `  Set                        ${settings.updatedAt}`,
  ];
  switch (verb) {
    case 'set': {
      const file = (flag: string) => {
        const path = stringFlag(command, flag);
        if (path === undefined) throw new UsageError(USAGE);
        return readFileSync(path, 'utf8').trim();
      };
      const settings = flagValue(() =>
        parsePlayIntegritySettings({
          packageName: stringFlag(command, 'package-name'),
          decryptionKey: file('decryption-key-file'),
          verificationKey: file('verification-key-file'),
        }),
      );
      const set = await playIntegrity.set(appId, settings, OPERATOR);
      return out.result(set, () => describe(set));
    }
    case 'show': {
      const shown = await playIntegrity.show(appId, OPERATOR);
      return out.result(shown, () => describe(shown));
    }
    case 'remove': {
      await playIntegrity.remove(appId, OPERATOR);
      return out.result(
        { appId, removed: true },
        () => `Play Integrity of app ${appId} removed: android attestations are refused from now on.`,
      );
    }
    default:
      throw new UsageError(USAGE);
  }
}

/** `tessera attestation apple …`: the app's App Attest settings. */
async function runApple(tessera: Tessera, verb: string | undefined, appId: string, command: ParsedCommand, out: Output): Promise<void> {
  const { appAttest } = tessera.attestation;
  const describe = (settings: AppAttestDescription) => [
    `App Attest of app ${appId}:`,
    `  App ID                     ${settings.teamId}.${settings.bundleId}`,
    `  Environment                ${settings.environment}`,
    `  Set                        ${settings.updatedAt}`,
  ];
  switch (verb) {
    case 'set': {
      const settings = flagValue(() =>
        parseAppAttestSettings({
          teamId: stringFlag(command, 'team-id'),
          bundleId: stringFlag(command, 'bundle-id'),
          environment: stringFlag(command, 'environment') ?? 'production',
        }),
      );
      const set = await appAttest.set(appId, settings, OPERATOR);
      return out.result(set, () => describe(set));
    }
    case 'show': {
      const shown = await appAttest.show(appId, OPERATOR);
      return out.result(shown, () => describe(shown));
    }
    case 'remove': {
      await appAttest.remove(appId, OPERATOR);
      return out.result({ appId, removed: true }, () => `App Attest of app ${appId} removed: apple attestations are refused from now on.`);
    }
    default:
      throw new UsageError(USAGE);
  }
}

function oneLine(token: DebugTokenDescription): string {
  return `${token.id}  ${token.createdAt}  last used ${token.lastUsedAt ?? 'never'}  ${token.name}`;
}
