import { parseArgs } from 'node:util';
import { isTesseraError } from 'tessera-tokens/internal/errors.js';

export class UsageError extends Error {}

/**
 * A command that failed (exit 1) with more to say than its message: `lines` printed before it, one
 * per line, and `details` added to the JSON error object with `--json`.
 */
export class CommandFailed extends Error {
  readonly lines: readonly string[];
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    readonly code: string,
    message: string,
    { lines = [], details = {} }: { lines?: readonly string[]; details?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.name = 'CommandFailed';
    this.lines = lines;
    this.details = details;
  }
}

export interface ParsedCommand {
  positionals: string[];
  json: boolean;
  help: boolean;
  /** The command's own flags: strings for valued ones, lists for repeatable ones, booleans for switches. */
  flags: Record<string, string | string[] | boolean | undefined>;
}

/**
 * A command's own flags: `true` for one taking a value (`--name NAME`), `'repeatable'` for one that
 * may be given several times (`--scope A --scope B`), `false` for a switch.
 */
export type FlagSpec = Record<string, boolean | 'repeatable'>;

/**
 * `--json` and `--help` for every command, plus its own flags; any other flag is a usage error, and
 * so is a valued flag given twice (`--kind admin --kind all` must not quietly mean the last one).
 */
export function parseCommand(args: string[], own: FlagSpec = {}): ParsedCommand {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  };
  for (const [flag, takesValue] of Object.entries(own)) {
    options[flag] = takesValue === 'repeatable' ? { type: 'string', multiple: true } : { type: takesValue ? 'string' : 'boolean' };
  }
  // A JWT key's id is a base64url thumbprint, which starts with '-' one time in 32 (`keys retire
  // --jwt -Xb…`). The only short flag is -h, so an argument of '-' and two or more characters is
  // never flags: it is handed to parseArgs as a stand-in, and given back as a value.
  const dashed = new Map<string, string>();
  const standIns = args.map((arg, index) => {
    if (!DASHED_VALUE.test(arg)) return arg;
    const standIn = `\u0000${index}`;
    dashed.set(standIn, arg);
    return standIn;
  });
  const restore = (value: string) => dashed.get(value) ?? value;
  let parsed;
  try {
    parsed = parseArgs({ args: standIns, allowPositionals: true, strict: true, options, tokens: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const valued = parsed.tokens.filter((token) => token.kind === 'option' && token.value !== undefined).map((token) => token.name);
  const repeated = valued.find((name, index) => own[name] !== 'repeatable' && valued.indexOf(name) !== index);
  if (repeated !== undefined) throw new UsageError(`--${repeated} is given more than once`);
  const { json, help, ...given } = parsed.values;
  const flags: ParsedCommand['flags'] = {};
  for (const [name, value] of Object.entries(given)) {
    flags[name] = typeof value === 'string' ? restore(value) : Array.isArray(value) ? (value as string[]).map(restore) : value;
  }
  return { positionals: parsed.positionals.map(restore), json: json === true, help: help === true, flags };
}

/** One '-', then at least two characters, the first not a '-': a value (a key id), never flags. */
const DASHED_VALUE = /^-[^-]./;

/** A repeatable flag's values, in order (none: empty). */
export function listFlag(command: ParsedCommand, flag: string): string[] {
  const value = command.flags[flag];
  return Array.isArray(value) ? value : [];
}

/** A valued flag's value, or undefined. */
export function stringFlag(command: ParsedCommand, flag: string): string | undefined {
  const value = command.flags[flag];
  return typeof value === 'string' ? value : undefined;
}

/** Reads a flag's value as the service reads its field (`read`); a rule it breaks is a usage error (exit 2). */
export function flagValue<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (isTesseraError(error)) throw new UsageError(error.message);
    throw error;
  }
}
