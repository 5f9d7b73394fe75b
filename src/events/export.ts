import { TesseraError } from 'tessera-tokens/internal/errors.js';
import { describeEvent, type AuditEvent } from './event.js';

/**
 * An app's events to take away: JSON Lines (one event a line, as the API describes it) or CSV (one
 * event a row, its details as JSON in the last column), for a spreadsheet or a SIEM.
 */
export const EXPORT_FORMATS = ['jsonl', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export function isExportFormat(format: string): format is ExportFormat {
  return (EXPORT_FORMATS as readonly string[]).includes(format);
}

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  jsonl: 'application/jsonl; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
};

/** What `Accept` asks for, as a client library says it (`application/x-ndjson` is JSON Lines' older name). */
const ACCEPTED: readonly (readonly [RegExp, ExportFormat])[] = [
  [/^application\/(jsonl|x-ndjson|x-jsonlines)$/, 'jsonl'],
  [/^text\/csv$/, 'csv'],
];

/**
 * The export asked for by `format` (`jsonl` or `csv`), or else by `Accept`, or undefined: a page of
 * JSON, as before. `format` wins over `Accept`; an unknown `format` is `invalid_request`.
 */
export function exportFormatOf(format: string | undefined, accept: string | undefined): ExportFormat | undefined {
  if (format !== undefined && format !== '') {
    if (!isExportFormat(format)) throw new TesseraError('invalid_request', `format must be one of: ${EXPORT_FORMATS.join(', ')}.`);
    return format;
  }
  for (const range of (accept ?? '').split(',')) {
    const type = range.split(';')[0]!.trim().toLowerCase();
    const found = ACCEPTED.find(([pattern]) => pattern.test(type));
    if (found !== undefined) return found[1];
  }
  return undefined;
}

const CSV_COLUMNS = ['id', 'at', 'type', 'principal', 'attempted', 'clientAddress', 'details'] as const;

/** The first lines of an export: CSV's header row; nothing for JSON Lines. */
export function exportHeader(format: ExportFormat): string {
  return format === 'csv' ? `${CSV_COLUMNS.join(',')}\r\n` : '';
}

/** One event as a line of the export. */
export function exportLine(format: ExportFormat, event: AuditEvent): string {
  const described = describeEvent(event);
  if (format === 'jsonl') return `${JSON.stringify(described)}\n`;
  const cells = [
    described.id,
    described.at,
    described.type,
    described.principal ?? '',
    described.attempted ?? '',
    described.clientAddress ?? '',
    JSON.stringify(described.details),
  ];
  return `${cells.map(csvCell).join(',')}\r\n`;
}

/**
 * A CSV cell (RFC 4180): quoted when it holds a comma, a quote or a line break. A value a
 * spreadsheet would run as a formula (`=`, `+`, `-`, `@`, a tab or a carriage return first: a
 * client address or an origin is what a client sent) starts with `'`, as OWASP advises.
 */
function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** The export's text, a chunk a page of events: the header, then each page's lines. */
export async function* exportChunks(format: ExportFormat, pages: AsyncIterable<readonly AuditEvent[]>): AsyncGenerator<string> {
  const header = exportHeader(format);
  if (header !== '') yield header;
  for await (const page of pages) {
    if (page.length > 0) yield page.map((event) => exportLine(format, event)).join('');
  }
}

/** The file name a download is offered under: `tessera-events-{appId}.{csv|jsonl}`. */
export function exportFileName(appId: string, format: ExportFormat): string {
  return `tessera-events-${appId.replace(/[^A-Za-z0-9_-]/g, '_')}.${format}`;
}
