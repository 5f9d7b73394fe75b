import { resolveKeyEncryptionKey } from '../jwt/key-encryption.js';
import { ConfigError, loadConfig } from '../config.js';
import { ATTESTATION_FLAGS, runAttestationCommand } from './attestation.js';
import { isTesseraError } from 'tessera-tokens/internal/errors.js';
import { currentBuild, describeBuild } from 'tessera-tokens/internal/release.js';
import { openStore } from '../store/open.js';
import { createTessera, type Tessera } from '../tessera.js';
import { quoted } from 'tessera-tokens/internal/text.js';
import { tracingRequested } from '../tracing/requested.js';
import { APPS_FLAGS, runAppsCommand } from './apps.js';
import { CommandFailed, parseCommand, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import { CREDENTIALS_FLAGS, runCredentialsCommand } from './credentials.js';
import { DEVELOPERS_FLAGS, runDevelopersCommand } from './developers.js';
import { EVENTS_FLAGS, runEventsCommand } from './events.js';
import { KEYS_FLAGS, runKeysCommand } from './signing-keys.js';
import { MIGRATE_FLAGS, runMigrateCommand } from './migrate.js';
import { runStoreCommand, STORE_FLAGS } from './store.js';
import { runUpgradeCommand, UPGRADE_FLAGS } from './upgrade.js';
import { runTokensCommand, TOKENS_FLAGS } from './tokens.js';
import { runWebhooksCommand, WEBHOOKS_FLAGS } from './webhooks.js';
import { Output } from './output.js';

const HELP = `tessera: the token service of an application backend

Usage:
  tessera serve                              run the HTTP server (PORT, HOST, DATABASE_URL)
  tessera apps create --name NAME [--json]   create an app; prints its four keys once
  tessera apps list [--json]                 list apps
  tessera apps show APP_ID [--json]          show an app (never its secret)
  tessera apps rotate-secret APP_ID [--json] issue a new ClientSecret; the old one stops working
  tessera apps rotate-secret APP_ID --grace SECONDS
                                             … the old one works SECONDS more (at most 30 days)
  tessera apps rotate-secret APP_ID --revoke-admin-tokens
                                             … and revoke every admin token of the app
  tessera apps end-previous-secret APP_ID [--json]
                                             end the grace period of the last rotation now: the
                                             replaced ClientSecret is refused from now on
  tessera apps create --name NAME --owner EMAIL [--json]
                                             … owned by a developer (see tessera developers)
  tessera apps transfer APP_ID --owner EMAIL [--json]
                                             give an app to another developer; the previous owner
                                             is no longer a member (collaborators stay)
  tessera apps configure APP_ID FIELD=VALUE… [--json]
                                             change the app's configuration fields (as PATCH
                                             …/configuration: anonymousAttestation=monitor,
                                             basicAnonymous=false, powMaxAttempts=100000, …); a value
                                             that reads as JSON is taken as JSON, null: the default
  tessera apps delete APP_ID [--json]        delete an app and all of its tokens and events
  tessera apps import FILE [--dry-run] [--skip-existing] [--json]
                                             bring apps in with the keys they have: JSON Lines, one
                                             {"name","appId","appKey","clientId","clientSecret"}
                                             a line (optionally "owner": EMAIL, "configuration");
                                             every line is checked first, then all or nothing; the
                                             first 20 problems are printed, the rest counted
                                             --dry-run: check and count, write nothing
                                             --skip-existing: skip (and count) an app stored already
                                             with the same four keys; one whose AppID or ClientID is
                                             stored with other keys still refuses the import
  tessera apps export [--json]               every app as JSON Lines, the shape import reads,
                                             without ClientSecrets (only their digests are kept)
  tessera credentials create APP_ID --name NAME --scope SCOPE [--scope SCOPE]… [--expires-at RFC3339]
                             [--allow-from CIDR]… [--format opaque|jwt] [--json]
                                             a further ClientID and ClientSecret for the app, whose
                                             admin tokens may do only what its scopes say (e.g.
                                             events:read), as JWTs with --format jwt (default: the
                                             app's format); prints its secret once
  tessera credentials list APP_ID [--json]   the app's credentials (never a secret)
  tessera credentials rotate APP_ID CLIENT_ID [--grace SECONDS] [--json]
                                             a new secret; the old one stops at once, or works
                                             SECONDS more (at most 30 days)
  tessera credentials end-previous-secret APP_ID CLIENT_ID [--json]
                                             end the grace period of its last rotation now
  tessera credentials revoke APP_ID CLIENT_ID [--json]
                                             delete a credential, and those its admin tokens made:
                                             their secrets and tokens are refused at once
  tessera webhooks create APP_ID --url URL [--event TYPE]… [--json]
                                             send the app's events (of these types; by default the
                                             alerts and every change) to URL, signed (Standard
                                             Webhooks); prints its secret once
  tessera webhooks list APP_ID [--json]      the app's webhooks (never a secret)
  tessera webhooks rotate-secret APP_ID WEBHOOK_ID [--json]
                                             a new secret; the old one signs beside it for 24 hours
  tessera webhooks delete APP_ID WEBHOOK_ID [--json]
                                             stop sending; its deliveries not yet sent are dropped
  tessera developers create --email EMAIL [--password-stdin] [--json]
                                             create a developer account (the portal's users); with
                                             --password-stdin its password is read from standard
                                             input, without it a one-time link that sets it is printed
  tessera developers list [--json]           list developers (never a password)
  tessera developers disable EMAIL [--json]  no more sign-in; ends the developer's sessions
  tessera developers reset-link EMAIL [--json]
                                             print a one-time link that sets a new password
  tessera tokens revoke-all APP_ID --kind admin|anonymous|all [--json]
                                             revoke every token of one kind, or all, of an app
  tessera attestation debug-token create APP_ID --name NAME [--json]
                                             a debug token that attests the app's anonymous token
                                             requests from CI and emulators; printed once
  tessera attestation debug-token list APP_ID [--json]
  tessera attestation debug-token revoke APP_ID DEBUG_TOKEN_ID [--json]
  tessera attestation android set APP_ID --package-name NAME --decryption-key-file FILE
                             --verification-key-file FILE [--json]
                                             check the app's Play Integrity tokens with the keys of
                                             the Play Console (base64, as it gives them, in files)
  tessera attestation android show|remove APP_ID [--json]
  tessera attestation apple set APP_ID --team-id TEAM_ID --bundle-id BUNDLE_ID
                             [--environment production|development] [--json]
                                             check the app's App Attest keys and assertions for
                                             TEAM_ID.BUNDLE_ID, as its builds attest
  tessera attestation apple show|remove APP_ID [--json]
  tessera keys list [--json]                 the keys that sign anonymous tokens
  tessera keys rotate [--json]               add a key that signs from now on (older keys still verify)
  tessera keys retire KEY_ID [--json]        retire a key: every anonymous token it signed is refused
  tessera keys list --jwt [--json]           the keys of JWT access tokens and status lists
  tessera keys rotate --jwt [--algorithm EdDSA|ES256] [--ahead SECONDS] [--json]
                                             publish a new JWT key that signs SECONDS later (3600 by
                                             default); the older ones stay published until their
                                             tokens expire
  tessera keys retire --jwt KID [--json]     end a JWT key's publication: every token it signed is
                                             refused
  tessera events APP_ID [--type TYPE] [--limit N] [--follow] [--json]
                                             what was counted in the last 24 h, then the app's
                                             latest audit events; --follow: then new ones
  tessera events APP_ID --counts [--per minute|hour|day] [--since DURATION] [--type TYPE] [--json]
                                             the app's event counts per minute, hour or day
                                             (DURATION: e.g. 90m, 24h, 7d)
  tessera events APP_ID --format jsonl|csv [--since DURATION] [--type TYPE]
                                             every event the log keeps (or since DURATION), newest
                                             first, as JSON Lines or CSV, to take away
  tessera store copy --from URL --to URL [--json]
                                             copy everything into an empty store (SQLite file or
                                             sqlite:PATH, postgres://…); stop the server first
  tessera store backup PATH [--json]         a consistent copy of the SQLite store, while it runs
                                             (PostgreSQL: pg_dump, see docs/deployment.md)
  tessera migrate [--dry-run] [--json]      apply the migrations the store lacks, as the role that
                                             owns the schema (DATABASE_DIRECT_URL if set); --dry-run:
                                             list the applied and pending ones, apply nothing
  tessera upgrade status [--json]            the release the store is finalized for, the instances
                                             serving on it by release, what waits for finalization
  tessera upgrade finalize [--json]          finalize the store for this release now: what an older
                                             release would misread becomes available (refused while
                                             an instance of an older release serves)
  tessera --version                          release, commit and schema version of this build

The CLI and the server find the store through DATABASE_URL (default: ./data/tessera.db), or
DATABASE_URL_FILE, a file that holds it (so do DATABASE_DIRECT_URL_FILE and REDIS_URL_FILE).
One-time links are printed as whole URLs when PUBLIC_URL is set, as paths on the server otherwise.
Exit codes: 0 done, 1 failed (e.g. no such app), 2 wrong usage.
`;

/** The commands that work on the store directly, with their own flags. */
const STORE_COMMANDS: Record<
  string,
  { flags: FlagSpec; execute: (tessera: Tessera, command: ParsedCommand, out: Output, stopped: AbortSignal) => Promise<void> }
> = {
  apps: { flags: APPS_FLAGS, execute: runAppsCommand },
  credentials: { flags: CREDENTIALS_FLAGS, execute: runCredentialsCommand },
  developers: { flags: DEVELOPERS_FLAGS, execute: runDevelopersCommand },
  tokens: { flags: TOKENS_FLAGS, execute: runTokensCommand },
  events: { flags: EVENTS_FLAGS, execute: runEventsCommand },
  keys: { flags: KEYS_FLAGS, execute: runKeysCommand },
  upgrade: { flags: UPGRADE_FLAGS, execute: runUpgradeCommand },
  attestation: { flags: ATTESTATION_FLAGS, execute: runAttestationCommand },
  webhooks: { flags: WEBHOOKS_FLAGS, execute: runWebhooksCommand },
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const json = rest.includes('--json');
  const out = new Output(json);
  try {
    if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
      process.stdout.write(HELP);
      return command === undefined ? 2 : 0;
    }
    if (command === '--version' || command === 'version') {
      const build = currentBuild();
      out.result(build, () => `tessera ${describeBuild(build)}`);
      return 0;
    }
    if (command === 'store') return await runStore(rest, out);
    if (command === 'migrate') {
      const parsed = parseCommand(rest, MIGRATE_FLAGS);
      if (parsed.help) {
        process.stdout.write(HELP);
        return 0;
      }
      await runMigrateCommand(parsed, loadConfig(), out);
      return 0;
    }
    const run = Object.hasOwn(STORE_COMMANDS, command) ? STORE_COMMANDS[command] : undefined;
    if (command !== 'serve' && run === undefined) throw new UsageError(`unknown command ${quoted(command)}; see tessera --help`);
    const parsed = parseCommand(rest, run?.flags ?? {});
    if (parsed.help) {
      process.stdout.write(HELP);
      return 0;
    }
    const config = loadConfig();
    if (run === undefined) {
      if (parsed.positionals.length > 0) throw new UsageError('usage: tessera serve');
      // Tracing starts before the store's and the server's modules load: its instrumentation of `pg`
      // patches the module as it is imported. Without the OTEL_* variables, nothing of it is loaded.
      const tracing = tracingRequested(process.env) ? await (await import('../tracing/start.js')).startTracing() : undefined;
      // The HTTP server's modules are loaded for `serve` alone: every other command starts without them.
      const { serve } = await import('./serve.js');
      await serve(config, tracing);
      return -1; // keeps running until a signal
    }
    // A command fails at once when the database cannot be reached (exit 1): its operator runs it again.
    const store = await openStore(config.databaseUrl, { ...config.postgres, startupRetryMs: 0 });
    const interrupted = new AbortController();
    const interrupt = () => interrupted.abort();
    process.once('SIGINT', interrupt).once('SIGTERM', interrupt);
    const tessera = createTessera({
      store,
      publicUrl: config.publicUrl,
      keyEncryptionKey: resolveKeyEncryptionKey(config.keyEncryptionKey, config.databaseUrl),
      previousKeyEncryptionKey: config.previousKeyEncryptionKey,
      webhookDestinations: config.webhookDestinations,
    });
    try {
      await run.execute(tessera, parsed, out, interrupted.signal);
    } finally {
      process.off('SIGINT', interrupt).off('SIGTERM', interrupt);
      await tessera.close();
    }
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      out.error('USAGE', error.message);
      return 2;
    }
    if (error instanceof CommandFailed) {
      out.error(error.code, error.message, error.details, error.lines);
      return 1;
    }
    if (isTesseraError(error)) {
      out.error(error.code, error.message);
      return 1;
    }
    if (error instanceof ConfigError) {
      out.error('CONFIGURATION', error.message);
      return 2;
    }
    out.error('FAILED', (error as Error).message);
    return 1;
  }
}

/** `tessera store …` opens stores by its own arguments: not through DATABASE_URL's services. */
async function runStore(args: string[], out: Output): Promise<number> {
  const parsed = parseCommand(args, STORE_FLAGS);
  if (parsed.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const interrupted = new AbortController();
  const interrupt = () => interrupted.abort();
  process.once('SIGINT', interrupt).once('SIGTERM', interrupt);
  try {
    await runStoreCommand(parsed, out, () => loadConfig().databaseUrl, interrupted.signal);
  } finally {
    process.off('SIGINT', interrupt).off('SIGTERM', interrupt);
  }
  return 0;
}

const code = await main(process.argv.slice(2));
if (code >= 0) process.exitCode = code;
