import { parseArgs } from 'node:util';

export class UsageError extends Error {}

export interface ParsedCommand {
  positionals: string[];
  json: boolean;
  help: boolean;
  /** The command's own flags: strings for valued ones, booleans for switches. */
  flags: Record<string, string | boolean | undefined>;
}

/** A command's own flags: `true` for one taking a value (`--name NAME`), `false` for a switch. */
export type FlagSpec = Record<string, boolean>;

/** `--json` and `--help` for every command, plus its own flags; any other flag is a usage error. */
export function parseCommand(args: string[], own: FlagSpec = {}): ParsedCommand {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  };
  for (const [flag, takesValue] of Object.entries(own)) options[flag] = { type: takesValue ? 'string' : 'boolean' };
  try {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, strict: true, options });
    const { json, help, ...flags } = values;
    return { positionals, json: json === true, help: help === true, flags };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** A valued flag's value, or undefined. */
export function stringFlag(command: ParsedCommand, flag: string): string | undefined {
  const value = command.flags[flag];
  return typeof value === 'string' ? value : undefined;
}
