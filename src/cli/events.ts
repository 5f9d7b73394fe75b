import { setTimeout as sleep } from 'node:timers/promises';
import {
  eventCountQuery,
  isCountPeriod,
  kindLabel,
  whoLabel,
  type CountOfKind,
  type EventCountQuery,
  type EventCountsDescription,
} from '../events/counts.js';
import { actorOfEvent, describeEvent, type AuditEvent } from '../events/event.js';
import { EXPORT_FORMATS, exportChunks, isExportFormat } from '../events/export.js';
import { parseEventFilter, parseEventPageQuery } from '../events/query.js';
import { OPERATOR } from '../request-context.js';
import type { Tessera } from '../tessera.js';
import { flagValue, stringFlag, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const EVENTS_FLAGS: FlagSpec = { type: true, limit: true, follow: false, counts: false, per: true, since: true, format: true };

const USAGE =
  'usage: tessera events APP_ID [--type TYPE] [--limit N] [--follow] [--json]\n' +
  '       tessera events APP_ID --counts [--per minute|hour|day] [--since DURATION] [--type TYPE] [--json]\n' +
  '       tessera events APP_ID --format jsonl|csv [--since DURATION] [--type TYPE]';
/** How often `--follow` looks for new events. */
const FOLLOW_INTERVAL_MS = 500;
const DAY_MS = 86_400_000;
const DURATION_UNITS_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: DAY_MS };

/**
 * `tessera events APP_ID`: what was counted in the last 24 hours, one line per kind of event, then
 * the app's latest events, oldest first (like a log's tail); with `--follow`, then every new one as
 * it is recorded, until interrupted. `--json` prints one JSON object per event, and no summary.
 * `--counts`: the counts per minute, hour or day as a table, or one JSON document.
 */
export async function runEventsCommand(tessera: Tessera, command: ParsedCommand, out: Output, stopped: AbortSignal): Promise<void> {
  const [appId, ...extra] = command.positionals;
  if (appId === undefined || extra.length > 0) throw new UsageError(USAGE);
  if (command.flags.counts === true) return printCounts(tessera, appId, command, out);
  if (command.flags.format !== undefined) return printExport(tessera, appId, command, out);
  if (command.flags.per !== undefined || command.flags.since !== undefined)
    throw new UsageError(`--per and --since go with --counts\n${USAGE}`);

  const query = flagValue(() => parseEventPageQuery({ type: stringFlag(command, 'type'), limit: stringFlag(command, 'limit') }, 20));
  const { type } = query;
  await tessera.apps.show(appId, OPERATOR); // APP_NOT_FOUND for an unknown app

  if (!out.json) {
    const now = tessera.clock.now();
    const counts = await tessera.events.counts(appId, eventCountQuery({ per: 'hour', since: now - DAY_MS, until: now }, now), type);
    for (const line of countSummary(counts.totals)) out.line(null, () => line);
  }
  const print = (event: AuditEvent) => out.line(describeEvent(event), () => oneLine(event));
  const latest = (await tessera.events.list(appId, query)).events.reverse();
  latest.forEach(print);
  if (command.flags.follow !== true) return;
  let lastId = latest.at(-1)?.id ?? (await tessera.events.list(appId, { limit: 1 })).events[0]?.id ?? 0;
  while (!stopped.aborted) {
    await sleep(FOLLOW_INTERVAL_MS, undefined, { signal: stopped }).catch(() => {});
    if (stopped.aborted) return;
    const { events, readTo } = await tessera.events.listAfter(appId, lastId, type === undefined ? {} : { type });
    events.forEach(print);
    lastId = readTo;
  }
}

/**
 * `--format jsonl|csv [--since DURATION] [--type TYPE]`: every event the filters keep (all the log
 * keeps without them), newest first, as the API's export gives them, a page at a time.
 */
async function printExport(tessera: Tessera, appId: string, command: ParsedCommand, out: Output): Promise<void> {
  if (command.flags.follow !== undefined || command.flags.limit !== undefined || command.flags.per !== undefined)
    throw new UsageError(`--follow, --limit and --per do not go with --format\n${USAGE}`);
  const format = stringFlag(command, 'format');
  if (format === undefined || !isExportFormat(format)) throw new UsageError(`--format must be one of: ${EXPORT_FORMATS.join(', ')}`);
  const since = stringFlag(command, 'since');
  const filter = flagValue(() => parseEventFilter({ type: stringFlag(command, 'type') }));
  if (since !== undefined) filter.since = tessera.clock.now() - durationMs(since);
  await tessera.apps.show(appId, OPERATOR); // APP_NOT_FOUND for an unknown app
  const pages = await tessera.appEvents.export(appId, filter, OPERATOR);
  for await (const chunk of exportChunks(format, pages)) out.data(chunk);
}

/** `--counts [--per P] [--since DURATION] [--type TYPE]`: up to now. */
async function printCounts(tessera: Tessera, appId: string, command: ParsedCommand, out: Output): Promise<void> {
  if (command.flags.follow !== undefined || command.flags.limit !== undefined)
    throw new UsageError(`--follow and --limit do not go with --counts\n${USAGE}`);
  const per = stringFlag(command, 'per');
  if (per !== undefined && !isCountPeriod(per)) throw new UsageError('--per must be minute, hour or day');
  const since = stringFlag(command, 'since');
  const type = flagValue(() => parseEventPageQuery({ type: stringFlag(command, 'type') })).type;
  const now = tessera.clock.now();
  const query: EventCountQuery = flagValue(() =>
    eventCountQuery({ per, since: since === undefined ? undefined : now - durationMs(since), until: now }, now),
  );
  await tessera.apps.show(appId, OPERATOR);
  const counts = await tessera.events.counts(appId, query, type);
  out.result(counts, () => countTable(counts));
}

/** `90m`, `24h`, `7d`. */
function durationMs(text: string): number {
  const match = /^([1-9][0-9]{0,5})([mhd])$/.exec(text);
  if (match === null) throw new UsageError('--since must be a duration such as 90m, 24h or 7d');
  return Number(match[1]) * DURATION_UNITS_MS[match[2]!]!;
}

function countSummary(totals: readonly CountOfKind[]): string[] {
  if (totals.length === 0) return ['Counted in the last 24 h: nothing.'];
  return ['Counted in the last 24 h (more: --counts):', ...kindLines(totals).map((line) => `  ${line}`), ...throttledNote(totals)];
}

/** What `token.throttled` is, under counts that have it: it is never listed, so it is said here. */
function throttledNote(totals: readonly CountOfKind[]): string[] {
  if (!totals.some((kind) => kind.type === 'token.throttled')) return [];
  return [
    "token.throttled: admin attempts refused (429) past the failed-admin limits (address: per client address, app: the app's ceiling); counted, not listed.",
  ];
}

/** `label  count`, the counts aligned on the right. */
function kindLines(kinds: readonly CountOfKind[]): string[] {
  const labelWidth = Math.max(...kinds.map((kind) => kindLabel(kind).length));
  const countWidth = Math.max(...kinds.map((kind) => String(kind.count).length));
  return kinds.map((kind) => `${kindLabel(kind).padEnd(labelWidth)}  ${String(kind.count).padStart(countWidth)}`);
}

function countTable(counts: EventCountsDescription): string[] {
  const heading = `Counts of ${counts.appId} per ${counts.per}, from ${minute(counts.since)} to ${minute(counts.until)} (UTC)`;
  if (counts.totals.length === 0) return [heading, 'nothing counted'];
  const rows = [
    ...counts.buckets.flatMap((bucket) => bucket.counts.map((kind) => [minute(bucket.start), kindLabel(kind), String(kind.count)])),
    ...counts.totals.map((kind) => ['total', kindLabel(kind), String(kind.count)]),
  ];
  const header = [counts.per, 'event', 'count'];
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const format = (row: string[]) => `${row[0]!.padEnd(widths[0]!)}  ${row[1]!.padEnd(widths[1]!)}  ${row[2]!.padStart(widths[2]!)}`;
  return [heading, format(header), ...rows.map(format), ...throttledNote(counts.totals)];
}

/** `2026-01-31T12:00Z`. */
function minute(iso: string): string {
  return `${iso.slice(0, 16)}Z`;
}

/** Details that are instants (UNIX ms): `expiresAt`, `previousSecretValidUntil`, `anonymousCutoff`. */
const INSTANT_DETAIL = /(At|Until|Cutoff)$/;

function oneLine(event: AuditEvent): string {
  const details = Object.entries(event.details)
    .map(
      ([key, value]) => `${key}=${typeof value === 'number' && INSTANT_DETAIL.test(key) ? new Date(value).toISOString() : String(value)}`,
    )
    .join(' ');
  const who = whoLabel(actorOfEvent(event.type, event.principal));
  return [new Date(event.at).toISOString(), event.type.padEnd(25), who.padEnd(9), event.clientAddress ?? '-', details].join('  ').trimEnd();
}
