import { parseArgs } from 'node:util';

export class UsageError extends Error {}

export interface ParsedCommand {
  positionals: string[];
  json: boolean;
  name: string | undefined;
  help: boolean;
}

/** The flags every verb takes; unknown flags are a usage error. */
export function parseCommand(args: string[]): ParsedCommand {
  try {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        json: { type: 'boolean', default: false },
        name: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
    return { positionals, json: values.json ?? false, name: values.name, help: values.help ?? false };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}
