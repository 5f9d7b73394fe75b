import { setTimeout as sleep } from 'node:timers/promises';
import { describeEvent, isEventType, type AuditEvent } from '../events/event.js';
import { MAX_EVENT_PAGE } from '../events/log.js';
import type { Tessera } from '../tessera.js';
import { quoted } from '../text.js';
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
  const type = stringFlag(command, 'type');
  if (type !== undefined && !isEventType(type)) throw new UsageError(`unknown event type ${quoted(type)}; ${USAGE}`);
  const limitFlag = stringFlag(command, 'limit') ?? '20';
  const limit = /^[0-9]{1,4}$/.test(limitFlag) ? Number(limitFlag) : 0;
  if (limit < 1 || limit > MAX_EVENT_PAGE) throw new UsageError(`--limit must be from 1 to ${MAX_EVENT_PAGE}`);
  await tessera.apps.show(appId); // APP_NOT_FOUND for an unknown app

  const print = (event: AuditEvent) => out.line(describeEvent(event), () => oneLine(event));
  const latest = (await tessera.events.list(appId, { type, limit })).events.reverse();
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

function oneLine(event: AuditEvent): string {
  const details = Object.entries(event.details)
    .map(([key, value]) => `${key}=${value}`)
    .join(' ');
  return [new Date(event.at).toISOString(), event.type.padEnd(25), (event.principal ?? '-').padEnd(9), event.clientAddress ?? '-', details]
    .join('  ')
    .trimEnd();
}
