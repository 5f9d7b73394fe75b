import { setTimeout as sleep } from 'node:timers/promises';
import { isTesseraError } from '../errors.js';
import { describeEvent, type AuditEvent } from '../events/event.js';
import { parseEventPageQuery, type EventPageQuery } from '../events/query.js';
import type { Tessera } from '../tessera.js';
import { stringFlag, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const EVENTS_FLAGS: FlagSpec = { type: true, limit: true, follow: false };

const USAGE = 'usage: tessera events APP_ID [--type TYPE] [--limit N] [--follow] [--json]';
/** How often `--follow` looks for new events. */
const FOLLOW_INTERVAL_MS = 500;

/**
 * `tessera events APP_ID`: the app's latest events, oldest first (like a log's tail); with
 * `--follow`, then every new one as it is recorded, until interrupted. `--json` prints one JSON
 * object per line.
 */
export async function runEventsCommand(tessera: Tessera, command: ParsedCommand, out: Output, stopped: AbortSignal): Promise<void> {
  const [appId, ...extra] = command.positionals;
  if (appId === undefined || extra.length > 0) throw new UsageError(USAGE);
  const query = parseQuery(stringFlag(command, 'type'), stringFlag(command, 'limit'));
  const { type } = query;
  await tessera.apps.show(appId); // APP_NOT_FOUND for an unknown app

  const print = (event: AuditEvent) => out.line(describeEvent(event), () => oneLine(event));
  const latest = (await tessera.events.list(appId, query)).events.reverse();
  latest.forEach(print);
  if (command.flags.follow !== true) return;
  let lastId = latest.at(-1)?.id ?? (await tessera.events.list(appId, { limit: 1 })).events[0]?.id ?? 0;
  while (!stopped.aborted) {
    await sleep(FOLLOW_INTERVAL_MS, undefined, { signal: stopped }).catch(() => {});
    if (stopped.aborted) return;
    for (const event of await tessera.events.listAfter(appId, lastId, type)) {
      print(event);
      lastId = event.id;
    }
  }
}

/** `--type` and `--limit` (default 20), read as the API reads them; a bad one is a usage error. */
function parseQuery(type: string | undefined, limit: string | undefined): EventPageQuery {
  try {
    return parseEventPageQuery({ type, limit }, 20);
  } catch (error) {
    if (isTesseraError(error)) throw new UsageError(error.message);
    throw error;
  }
}

function oneLine(event: AuditEvent): string {
  const details = Object.entries(event.details)
    .map(([key, value]) => `${key}=${value}`)
    .join(' ');
  return [new Date(event.at).toISOString(), event.type.padEnd(25), (event.principal ?? '-').padEnd(9), event.clientAddress ?? '-', details]
    .join('  ')
    .trimEnd();
}
