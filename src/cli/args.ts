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
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, strict: true, options, tokens: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const valued = parsed.tokens.filter((token) => token.kind === 'option' && token.value !== undefined).map((token) => token.name);
  const repeated = valued.find((name, index) => own[name] !== 'repeatable' && valued.indexOf(name) !== index);
  if (repeated !== undefined) throw new UsageError(`--${repeated} is given more than once`);
  const { json, help, ...flags } = parsed.values;
  return { positionals: parsed.positionals, json: json === true, help: help === true, flags: flags as ParsedCommand['flags'] };
}

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
