import type { Clock } from 'tessera-tokens/internal/clock.js';
import { clientSecretDigest, digestsEqual, randomUUID } from 'tessera-tokens/internal/crypto.js';
import type { DeveloperRecord } from '../developers/developer.js';
import { normaliseEmail } from '../developers/email.js';
import type { DeveloperAccountStore } from '../developers/store.js';
import { isTesseraError, TesseraError } from 'tessera-tokens/internal/errors.js';
import type { NewAuditEvent } from '../events/event.js';
import type { EventLog } from '../events/log.js';
import { developerDetails, requireOperator, type RequestContext } from '../request-context.js';
import { quoted } from 'tessera-tokens/internal/text.js';
import { CLIENT_SECRET_FORM, CLIENT_SECRET_PREFIX, isTesseraClientSecret } from './secret-format.js';
import { DEFAULT_APP_CONFIGURATION, type AppConfiguration, type AppRecord } from 'tessera-tokens/internal/apps/app.js';
import { parseConfigurationChanges } from 'tessera-tokens/internal/apps/configuration.js';
import { checkedAppName } from './service.js';
import type { AppStore, NewImportedApp, StoredAppKeys } from './store.js';
import { StoreConflictError, type Transactional } from 'tessera-tokens/internal/transaction.js';
import type { EventStore } from '../events/store.js';

/**
 * Bringing apps in with the keys they have (`tessera apps import`), and writing them out in the same
 * shape (`tessera apps export`): JSON Lines, one app a line. An app's AppID and AppKey are compiled
 * into mobile apps already in users' hands, and its ClientID and ClientSecret into server code, so
 * they are kept exactly as they are. docs/decisions.md ("Bringing apps in").
 */

/**
 * The largest file `import` reads: about 300,000 apps of the usual size, which take about 1 GB of
 * memory, since the whole file is checked before anything is written.
 */
export const MAX_IMPORT_FILE_BYTES = 64 * 1024 * 1024;
/** The longest line: a configuration listing the most origins of the longest length fits with room to spare. */
export const MAX_IMPORT_LINE_BYTES = 64 * 1024;
/**
 * The problems an import lists; past them, lines with problems are only counted. A file of bad
 * lines is refused whole either way, and listing millions of problems would take more memory than
 * the file (a 15 MiB file of `{}` lines is 8 million of them).
 */
export const MAX_LISTED_PROBLEMS = 1_000;

/**
 * The key formats accepted. Only the AppID's length tells them apart: AppKey and ClientID are 32
 * lower-case hex characters in both, the ClientSecret 64 (Tessera's too, before it gave secrets a
 * prefix and a checksum: `secret-format.ts`). Tessera's own are what `access-keys.ts` makes.
 */
const KEY_PATTERNS = {
  appId: /^(?:[0-9a-f]{8}|[0-9a-f]{16})$/,
  appKey: /^[0-9a-f]{32}$/,
  clientId: /^[0-9a-f]{32}$/,
  clientSecret: new RegExp(`^(?:[0-9a-f]{64}|${CLIENT_SECRET_FORM})$`),
} as const;

const KEY_RULES: Record<keyof typeof KEY_PATTERNS, string> = {
  appId: "8 lower-case hex characters (the established service's format) or 16 (Tessera's)",
  appKey: '32 lower-case hex characters',
  clientId: '32 lower-case hex characters',
  clientSecret: '64 lower-case hex characters, or a secret Tessera made (tessera_ and 49 letters and digits)',
};

/** Which format an AppID is in: the established service's (8 hex characters) or Tessera's (16). */
export type AppIdFormat = 'established' | 'tessera';

/** Every field a line may have; the first five are required. */
const FIELDS = ['name', 'appId', 'appKey', 'clientId', 'clientSecret', 'owner', 'configuration'] as const;
const REQUIRED: readonly string[] = FIELDS.slice(0, 5);

/** One app of the file, checked: what is stored of it, and where it was. */
export interface AppToImport {
  /** 1-based, as an editor counts. */
  line: number;
  name: string;
  appId: string;
  appKey: string;
  clientId: string;
  clientSecret: string;
  /** Normalised; null: the operator's alone (no owner). */
  ownerEmail: string | null;
  configuration: AppConfiguration;
}

/** What is wrong with one line; a line may have several. */
export interface ImportProblem {
  line: number;
  message: string;
}

/** A file read line by line: the apps of the good lines, and the problems of the others. */
export interface ParsedImport {
  apps: AppToImport[];
  /** The first `MAX_LISTED_PROBLEMS`. */
  problems: ImportProblem[];
  /** Problems found past those, counted only. */
  unlistedProblems: number;
  /** Lines in the file, blank ones included. */
  lines: number;
  blankLines: number;
}

/** How an import runs, for an operator who may run it more than once. */
export interface ImportOptions {
  /** Check everything and count what would be imported and skipped, but write nothing. */
  dryRun?: boolean;
  /** An app stored already with the same keys (AppID, AppKey, ClientID, ClientSecret) is skipped and counted, not refused. */
  skipExisting?: boolean;
}

/** What an import did, or with `dryRun` would do. */
export interface ImportSummary {
  /** Written (with `dryRun`: to be written). */
  imported: number;
  /** Stored already with the same keys, and left as they are (`skipExisting`). */
  skipped: number;
  dryRun: boolean;
  lines: number;
  blankLines: number;
  /** Apps imported given an owner. */
  owned: number;
  /** The apps imported, by AppID format. */
  establishedFormat: number;
  tesseraFormat: number;
}

/** An app as `export` writes it: what `import` reads, without the ClientSecret, which is not kept. */
export interface ExportedApp {
  name: string;
  appId: string;
  appKey: string;
  clientId: string;
  owner: string | null;
  configuration: AppConfiguration;
}

/** Some lines of the file are wrong: nothing was imported (with `dryRun`, nothing would be). */
export class ImportRefused extends Error {
  constructor(
    readonly problems: readonly ImportProblem[],
    readonly lines: number,
    /** Problems past the listed ones, counted only (`MAX_LISTED_PROBLEMS`). */
    readonly unlistedProblems = 0,
    readonly dryRun = false,
  ) {
    const badLines = new Set(problems.map((problem) => problem.line)).size;
    const outcome = dryRun ? 'The import would be refused, nothing imported' : 'Nothing was imported';
    super(
      unlistedProblems === 0
        ? `${outcome}: ${badLines} of the ${lines} lines have problems; fix them and run the import again.`
        : `${outcome}: the file has ${problems.length + unlistedProblems} problems in its ${lines} lines; fix them and run the import again.`,
    );
    this.name = 'ImportRefused';
  }
}

const NEWLINE = 0x0a;
/** Keys named in a sentence: `appKey and clientSecret`. */
const KEY_LIST = new Intl.ListFormat('en', { type: 'conjunction' });
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * Reads a JSON Lines file of apps: each line checked on its own (its JSON, its fields, its keys'
 * formats, its name and configuration), then AppIDs and ClientIDs that appear on two lines. Blank
 * lines are skipped; a line may end in CRLF; a UTF-8 byte order mark at the start is ignored.
 */
export function parseImportFile(bytes: Uint8Array): ParsedImport {
  if (bytes.length > MAX_IMPORT_FILE_BYTES) throw fileTooLarge(bytes.length);
  const apps: AppToImport[] = [];
  const problems: ImportProblem[] = [];
  let unlistedProblems = 0;
  const report = (found: readonly ImportProblem[]) => {
    const room = Math.max(0, MAX_LISTED_PROBLEMS - problems.length);
    problems.push(...found.slice(0, room));
    unlistedProblems += found.length - Math.min(room, found.length);
  };
  let lines = 0;
  let blankLines = 0;
  const appIdLines = new Map<string, number>();
  const clientIdLines = new Map<string, number>();
  for (let start = 0; start < bytes.length;) {
    const newline = bytes.indexOf(NEWLINE, start);
    const end = newline === -1 ? bytes.length : newline;
    lines++;
    const line = lines;
    const checked = checkLine(bytes.subarray(start, end), line);
    start = end + 1;
    if (checked === 'blank') {
      blankLines++;
      continue;
    }
    const lineProblems = [...checked.problems];
    // The same key twice: a second line with it would be refused by the store, so say which lines.
    for (const [key, seen] of [
      ['appId', appIdLines],
      ['clientId', clientIdLines],
    ] as const) {
      const value = checked.fields[key];
      if (value === undefined) continue;
      const first = seen.get(value);
      if (first === undefined) seen.set(value, line);
      else lineProblems.push({ line, message: `${key} ${quoted(value)} is on line ${first} already.` });
    }
    report(lineProblems);
    // Once the file is refused whatever else it holds, its apps are no longer kept.
    if (lineProblems.length === 0 && unlistedProblems === 0 && checked.app !== undefined) apps.push(checked.app);
  }
  return { apps, problems, unlistedProblems, lines, blankLines };
}

interface CheckedLine {
  /** The app, when the line has no problem of its own. */
  app: AppToImport | undefined;
  /** The keys that are well-formed, even on a line with other problems: they are checked for duplicates too. */
  fields: { appId?: string; clientId?: string };
  problems: ImportProblem[];
}

function checkLine(raw: Uint8Array, line: number): CheckedLine | 'blank' {
  const problem = (message: string): CheckedLine => ({ app: undefined, fields: {}, problems: [{ line, message }] });
  if (raw.length > MAX_IMPORT_LINE_BYTES) return problem(`The line is ${raw.length} bytes long: at most ${MAX_IMPORT_LINE_BYTES}.`);
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    return problem('The line is not UTF-8 text.');
  }
  if (text.trim() === '') return 'blank';
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // Not the parser's message: it may quote the line, and the line may hold a ClientSecret.
    const position = /position (\d+)/.exec((error as Error).message)?.[1];
    return problem(`The line is not JSON${position === undefined ? '' : ` (at character ${Number(position) + 1})`}.`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return problem('The line must be one JSON object: {"name", "appId", "appKey", "clientId", "clientSecret"}.');
  }
  const object = value as Record<string, unknown>;
  const problems: ImportProblem[] = [];
  const add = (message: string) => problems.push({ line, message });
  const unknown = Object.keys(object).filter((field) => !(FIELDS as readonly string[]).includes(field));
  if (unknown.length > 0)
    add(`Unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map(quoted).join(', ')}; the fields are: ${FIELDS.join(', ')}.`);
  const missing = REQUIRED.filter((field) => !Object.hasOwn(object, field));
  if (missing.length > 0) {
    const secretOnly = missing.length === 1 && missing[0] === 'clientSecret';
    add(
      secretOnly
        ? "clientSecret is missing: export does not write it (it is kept only as a digest); add the app's ClientSecret."
        : `Missing: ${missing.join(', ')}.`,
    );
  }

  const fields: CheckedLine['fields'] = {};
  const keys: Partial<Record<keyof typeof KEY_PATTERNS, string>> = {};
  for (const key of Object.keys(KEY_PATTERNS) as (keyof typeof KEY_PATTERNS)[]) {
    if (!Object.hasOwn(object, key)) continue;
    const given = object[key];
    if (key === 'clientSecret' && typeof given === 'string' && KEY_PATTERNS[key].test(given)) {
      // Never echoed, whatever is wrong with it.
      const weakness = clientSecretWeakness(given);
      if (weakness === null) keys[key] = given;
      else add(weakness);
    } else if (typeof given === 'string' && KEY_PATTERNS[key].test(given)) keys[key] = given;
    else if (key === 'clientSecret') add(`clientSecret must be ${KEY_RULES[key]}.`);
    else add(`${key} ${typeof given === 'string' ? quoted(given) : `(a ${typeName(given)})`} must be ${KEY_RULES[key]}.`);
  }
  if (keys.appId !== undefined) fields.appId = keys.appId;
  if (keys.clientId !== undefined) fields.clientId = keys.clientId;

  let name: string | undefined;
  if (Object.hasOwn(object, 'name')) {
    if (typeof object.name !== 'string') add(`name must be a string, not a ${typeName(object.name)}.`);
    else name = caught(() => checkedAppName(object.name as string), add);
  }

  let ownerEmail: string | null = null;
  if (Object.hasOwn(object, 'owner') && object.owner !== null) {
    const owner = typeof object.owner === 'string' ? normaliseEmail(object.owner) : undefined;
    if (owner === undefined) add("owner must be a developer's email address (see tessera developers list), or null for none.");
    else ownerEmail = owner;
  }

  let configuration: AppConfiguration | undefined = { ...DEFAULT_APP_CONFIGURATION };
  if (Object.hasOwn(object, 'configuration')) {
    const given = object.configuration;
    const empty = given !== null && typeof given === 'object' && !Array.isArray(given) && Object.keys(given).length === 0;
    configuration = empty
      ? configuration
      : caught(
          () => ({ ...DEFAULT_APP_CONFIGURATION, ...parseConfigurationChanges(given) }),
          (message) => add(`configuration: ${message}`),
        );
  }

  const { appId, appKey, clientId, clientSecret } = keys;
  if (
    problems.length > 0 ||
    name === undefined ||
    appId === undefined ||
    appKey === undefined ||
    clientId === undefined ||
    clientSecret === undefined ||
    configuration === undefined
  ) {
    return { app: undefined, fields, problems };
  }
  return { app: { line, name, appId, appKey, clientId, clientSecret, ownerEmail, configuration }, fields, problems };
}

/** The value `check` returns, or undefined with its `invalid_request` message given to `add`. */
function caught<T>(check: () => T, add: (message: string) => void): T | undefined {
  try {
    return check();
  } catch (error) {
    if (!isTesseraError(error)) throw error;
    add(error.message);
    return undefined;
  }
}

/**
 * Why a ClientSecret of the right form must not be imported, or null: a `tessera_` secret whose
 * checksum is wrong (mistyped, or made up), or 64 hex characters that no random source would make
 * (one repeated pattern, such as 64 zeros or `deadbeef` eight times; fewer than 10 of the 16 hex
 * digits; a run of 10 of the same): a secret anyone can guess issues admin tokens to anyone. A
 * random secret fails these by chance less than once in a billion.
 */
export function clientSecretWeakness(secret: string): string | null {
  if (secret.startsWith(CLIENT_SECRET_PREFIX)) {
    return isTesseraClientSecret(secret)
      ? null
      : 'clientSecret starts with tessera_ but its checksum is wrong: it is mistyped, or was not made by Tessera; copy it again.';
  }
  const repeatsPattern = [1, 2, 4, 8, 16, 32].some((period) => secret === secret.slice(0, period).repeat(secret.length / period));
  const distinct = new Set(secret).size;
  if (repeatsPattern || distinct < 10 || /(.)\1{9}/.test(secret)) {
    return (
      'clientSecret is too easy to guess (a repeated pattern, few different characters or a long run of one): it was not made at random, ' +
      'and anyone who guesses it would get admin tokens. Give the app a random one (openssl rand -hex 32), import that, and hand it to its server code.'
    );
  }
  return null;
}

function typeName(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'list' : typeof value;
}

export function appIdFormat(appId: string): AppIdFormat {
  return appId.length === 8 ? 'established' : 'tessera';
}

function fileTooLarge(size: number): TesseraError {
  return new TesseraError('invalid_request', `The file is ${size} bytes: an import reads at most ${MAX_IMPORT_FILE_BYTES} (split it).`);
}

/**
 * The operator's import and export of apps with their keys. An import checks every line, then the
 * store (AppIDs and ClientIDs taken, owners that exist and are enabled), before it writes anything,
 * and writes every app in one transaction: all of them, or none.
 */
export class AppImports {
  constructor(
    private readonly store: AppStore,
    private readonly transactions: Transactional<{ readonly apps: AppStore; readonly events: EventStore }>,
    private readonly developers: Pick<DeveloperAccountStore, 'findByEmail'>,
    private readonly clock: Clock,
    private readonly events: EventLog,
    /** Called for each app written, so that this process's caches forget that it was absent. */
    private readonly onChange: (appId: string) => void = () => {},
  ) {}

  /**
   * Imports the file's apps, or throws `ImportRefused` with every problem found (and writes nothing).
   * With `dryRun`, checks the same and counts, but writes nothing either way. The operator's only.
   */
  async importApps(bytes: Uint8Array, context: RequestContext, options: ImportOptions = {}): Promise<ImportSummary> {
    requireOperator(context);
    const dryRun = options.dryRun === true;
    const parsed = parseImportFile(bytes);
    const problems = [...parsed.problems];
    const { toImport, existing } = await this.#againstStore(parsed.apps, options.skipExisting === true, problems);
    // A skipped app is left as it is: its owner need not exist any more.
    const owners = await this.#owners(toImport, problems);
    if (problems.length > 0 || parsed.unlistedProblems > 0) {
      const listed = sortedByLine(problems).slice(0, MAX_LISTED_PROBLEMS);
      throw new ImportRefused(listed, parsed.lines, parsed.unlistedProblems + problems.length - listed.length, dryRun);
    }

    const at = this.clock.now();
    const records: NewImportedApp[] = toImport.map((app) => ({
      app: recordOf(app, at),
      ownerId: app.ownerEmail === null ? null : owners.get(app.ownerEmail)!.id,
    }));
    const owned = records.filter((record) => record.ownerId !== null);
    const established = toImport.filter((app) => appIdFormat(app.appId) === 'established').length;
    const summary: ImportSummary = {
      imported: records.length,
      skipped: existing.length,
      dryRun,
      lines: parsed.lines,
      blankLines: parsed.blankLines,
      owned: owned.length,
      establishedFormat: established,
      tesseraFormat: records.length - established,
    };
    if (dryRun || records.length === 0) return summary;

    // As for an app created with an owner (`AppService.create`): `app.owner_changed` in the app's log.
    const stamp = owned.length === 0 ? undefined : await this.events.stamp(owned[0]!.app.appId, context);
    const events: NewAuditEvent[] =
      stamp === undefined
        ? []
        : owned.map(({ app, ownerId }) => ({
            ...stamp,
            appId: app.appId,
            type: 'app.owner_changed',
            details: { ...developerDetails(context), ownerId, previousOwnerId: null },
          }));
    let written: true | undefined;
    try {
      // Every app and its event, or nothing.
      written = await this.transactions.transaction(async (tx) => {
        if ((await tx.apps.insertMany(records)) === undefined) return undefined;
        await tx.events.append(events);
        return true;
      });
    } catch (error) {
      if (error instanceof StoreConflictError) {
        throw new TesseraError(
          'CONFLICT',
          'Nothing was imported: an AppID or ClientID of the file was taken while it was being imported; run the import again to see which.',
        );
      }
      throw error;
    }
    if (written === undefined) {
      throw new TesseraError(
        'CONFLICT',
        'Nothing was imported: an owner of the file was disabled or deleted while it was being imported; run the import again to see which.',
      );
    }
    for (const { app } of records) this.onChange(app.appId);
    return summary;
  }

  /** Every app, oldest first, as `import` reads it, without the ClientSecret (only its digest is kept). */
  async exportApps(): Promise<ExportedApp[]> {
    return (await this.store.listWithOwners()).map(({ app, ownerEmail }) => ({
      name: app.name,
      appId: app.appId,
      appKey: app.appKey,
      clientId: app.clientId,
      owner: ownerEmail,
      configuration: { ...app.configuration },
    }));
  }

  /**
   * The file's apps that the store has no key of, to import; those stored already with the same
   * keys, skipped with `skipExisting`; and a problem for every other AppID or ClientID the store has.
   */
  async #againstStore(
    apps: readonly AppToImport[],
    skipExisting: boolean,
    problems: ImportProblem[],
  ): Promise<{ toImport: AppToImport[]; existing: AppToImport[] }> {
    if (apps.length === 0) return { toImport: [], existing: [] };
    const stored = await this.store.findByKeys(
      apps.map((app) => app.appId),
      apps.map((app) => app.clientId),
    );
    const byAppId = new Map(stored.map((keys) => [keys.appId, keys]));
    const byClientId = new Map(stored.map((keys) => [keys.clientId, keys]));
    const toImport: AppToImport[] = [];
    const existing: AppToImport[] = [];
    for (const app of apps) {
      const withAppId = byAppId.get(app.appId);
      const withClientId = byClientId.get(app.clientId);
      if (withAppId === undefined && withClientId === undefined) {
        toImport.push(app);
        continue;
      }
      const differing = withAppId === undefined ? undefined : keysDiffering(app, withAppId);
      if (differing?.length === 0) {
        if (skipExisting) existing.push(app);
        else {
          problems.push({
            line: app.line,
            message: `appId ${quoted(app.appId)} is in the store already, with the same keys: --skip-existing skips such apps.`,
          });
        }
        continue;
      }
      if (differing !== undefined) {
        problems.push({
          line: app.line,
          message: `appId ${quoted(app.appId)} is taken: the app in the store with it has another ${KEY_LIST.format(differing)}.`,
        });
      }
      if (withClientId !== undefined && withClientId !== withAppId) {
        problems.push({
          line: app.line,
          message: `clientId ${quoted(app.clientId)} is taken: the app ${quoted(withClientId.appId)} in the store has it.`,
        });
      }
    }
    return { toImport, existing };
  }

  /** The owners by email; a problem for each line whose owner has no account or is disabled. */
  async #owners(apps: readonly AppToImport[], problems: ImportProblem[]): Promise<Map<string, DeveloperRecord>> {
    const emails = [...new Set(apps.flatMap((app) => (app.ownerEmail === null ? [] : [app.ownerEmail])))];
    const found = new Map<string, DeveloperRecord>();
    // A few at a time: PostgreSQL answers them in parallel, without taking the whole pool.
    for (let start = 0; start < emails.length; start += 8) {
      const batch = emails.slice(start, start + 8);
      const developers = await Promise.all(batch.map((email) => this.developers.findByEmail(email)));
      developers.forEach((developer, index) => {
        if (developer !== undefined) found.set(batch[index]!, developer);
      });
    }
    for (const app of apps) {
      if (app.ownerEmail === null) continue;
      const owner = found.get(app.ownerEmail);
      if (owner === undefined) {
        problems.push({
          line: app.line,
          message: `owner ${quoted(app.ownerEmail)}: no developer has this email address (tessera developers create).`,
        });
      } else if (owner.disabledAt !== null) {
        problems.push({ line: app.line, message: `owner ${quoted(app.ownerEmail)} is disabled: choose another developer.` });
      }
    }
    return found;
  }
}

/**
 * Which of the line's keys the stored app with its AppID has otherwise (none: it is the same app).
 * The ClientSecret is compared as its digest, the only form stored, in constant time.
 */
function keysDiffering(app: AppToImport, stored: StoredAppKeys): string[] {
  return [
    ...(app.appKey === stored.appKey ? [] : ['appKey']),
    ...(app.clientId === stored.clientId ? [] : ['clientId']),
    ...(digestsEqual(clientSecretDigest(app.clientSecret), stored.clientSecretHash) ? [] : ['clientSecret']),
  ];
}

function recordOf(app: AppToImport, at: number): AppRecord {
  return {
    appId: app.appId,
    name: app.name,
    appKey: app.appKey,
    clientId: app.clientId,
    // Only the digest is stored, as for a created app.
    clientSecretHash: clientSecretDigest(app.clientSecret),
    previousSecret: null,
    adminId: randomUUID(),
    createdAt: at,
    configuration: app.configuration,
    anonymousCutoff: null,
    adminGeneration: 0,
    credentials: [],
  };
}

function sortedByLine(problems: ImportProblem[]): ImportProblem[] {
  return problems.sort((a, b) => a.line - b.line);
}
