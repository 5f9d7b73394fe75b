import { backupStore } from '../store/backup.js';
import { copyStore, DEFAULT_BATCH_SIZE, type CopyProgress } from '../store/copy.js';
import { parseDatabaseUrl } from 'tessera-tokens/internal/store/location.js';
import { stringFlag, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const STORE_FLAGS: FlagSpec = { from: true, to: true, 'batch-size': true };

const USAGE = 'usage: tessera store copy --from URL --to URL [--batch-size N] [--json], or tessera store backup PATH [--json]';

/** How often plain progress lines are written (stderr not a terminal), besides one per table. */
const PLAIN_PROGRESS_INTERVAL_MS = 10_000;

/**
 * `tessera store copy|backup`: moving and keeping the data. These open stores by their own
 * arguments (copy) or DATABASE_URL (backup), not through the domain services.
 */
export async function runStoreCommand(
  command: ParsedCommand,
  out: Output,
  databaseUrl: () => string | undefined,
  stopped: AbortSignal,
): Promise<void> {
  const [verb, ...operands] = command.positionals;
  switch (verb) {
    case 'copy': {
      const from = storeFlag(command, 'from');
      const to = storeFlag(command, 'to');
      if (operands.length > 0) throw new UsageError(USAGE);
      const batchText = stringFlag(command, 'batch-size');
      if (batchText !== undefined && !/^[1-9][0-9]{0,5}$/.test(batchText))
        throw new UsageError('--batch-size must be a whole number from 1 to 999999');
      const progress = out.json ? undefined : progressPrinter(process.stderr);
      const result = await copyStore(from, to, {
        batchSize: batchText === undefined ? DEFAULT_BATCH_SIZE : Number(batchText),
        onProgress: progress?.update,
        signal: stopped,
        onWarning: (message) => out.warning(message),
      }).finally(() => progress?.end());
      const compared = Object.values(result.compared).reduce((sum, rows) => sum + rows, 0);
      return out.result(result, () => [
        `Copied ${grouped(result.rows)} rows from ${result.from} to ${result.to} in ${seconds(result.elapsedMs)} (schema version ${result.schemaVersion}).`,
        `Verified: the row counts of ${result.tables.length} tables, and ${compared} rows compared field by field.`,
        ...result.tables.map((table) => `  ${table.name.padEnd(20)} ${grouped(table.rows).padStart(12)}`),
        'Point DATABASE_URL at the target, then start Tessera on it.',
      ]);
    }
    case 'backup': {
      if (command.flags.from !== undefined || command.flags.to !== undefined || command.flags['batch-size'] !== undefined)
        throw new UsageError(USAGE);
      const [path, ...extra] = operands;
      if (path === undefined || path === '' || extra.length > 0) throw new UsageError(USAGE);
      const result = await backupStore(databaseUrl(), path);
      return out.result(
        result,
        () =>
          `Backed up ${result.from} to ${result.to} (${grouped(result.bytes)} bytes, readable by its owner only) in ${seconds(result.elapsedMs)}.`,
      );
    }
    default:
      throw new UsageError(USAGE);
  }
}

/** `--from`/`--to`: a store as DATABASE_URL names one; an empty one is not the default store here. */
function storeFlag(command: ParsedCommand, flag: 'from' | 'to'): string {
  const value = stringFlag(command, flag);
  if (value === undefined || value.trim() === '') throw new UsageError(USAGE);
  try {
    parseDatabaseUrl(value);
  } catch {
    throw new UsageError(`--${flag} must be a file path, sqlite:PATH, or postgres://…`);
  }
  return value;
}

/**
 * Progress on stderr: a bar redrawn in place on a terminal; otherwise a line per table, and one
 * every ten seconds on a long one (a log keeps them).
 */
function progressPrinter(stream: NodeJS.WriteStream): { update: (progress: CopyProgress) => void; end: () => void } {
  const terminal = stream.isTTY === true;
  let lastLineAt = Date.now();
  let drawn = false;
  return {
    update(progress) {
      const finished = progress.done === progress.total;
      if (terminal) {
        stream.write(`\r${bar(progress)}\u001b[K${finished ? '\n' : ''}`);
        drawn = !finished;
        return;
      }
      if (finished || Date.now() - lastLineAt >= PLAIN_PROGRESS_INTERVAL_MS) {
        lastLineAt = Date.now();
        stream.write(`${progress.table}: ${grouped(progress.done)}/${grouped(progress.total)} rows${rate(progress)}\n`);
      }
    },
    end() {
      if (drawn) stream.write('\n');
    },
  };
}

function bar(progress: CopyProgress): string {
  const width = 30;
  const fraction = progress.total === 0 ? 1 : Math.min(1, progress.done / progress.total);
  const filled = Math.round(fraction * width);
  return `${progress.table.padEnd(20)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${grouped(progress.done)}/${grouped(progress.total)}${rate(progress)}`;
}

function rate(progress: CopyProgress): string {
  if (progress.done === 0 || progress.elapsedMs < 1) return '';
  return `, ${grouped(Math.round((progress.done * 1000) / progress.elapsedMs))} rows/s`;
}

function grouped(value: number): string {
  return value.toLocaleString('en-US');
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
