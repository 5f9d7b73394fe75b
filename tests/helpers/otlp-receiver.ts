import { createServer, type Server } from 'node:http';

/** One span as OTLP/HTTP JSON carries it, with its resource and scope. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty or absent for a root span. */
  parentSpanId?: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  scope: string;
  resource: Record<string, unknown>;
}

/** An export as it came, for what the spans do not show (the protocol, bytes that must not be there). */
export interface ReceivedExport {
  path: string;
  contentType: string;
  body: Buffer;
}

interface OtlpValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
}

interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}

/**
 * An OTLP/HTTP receiver on 127.0.0.1 for a `tessera serve` of a test to export to
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`): it keeps every export's bytes, and decodes JSON ones
 * (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) into spans.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly exports: ReceivedExport[] = [];
  readonly #server: Server;
  #url = '';

  private constructor() {
    this.#server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks);
        const contentType = request.headers['content-type'] ?? '';
        const json = contentType.startsWith('application/json');
        this.exports.push({ path: request.url ?? '', contentType, body });
        if (json) this.spans.push(...decode(body));
        response.writeHead(200, { 'content-type': json ? 'application/json' : contentType });
        response.end(json ? '{}' : '');
      });
    });
  }

  /** e.g. http://127.0.0.1:40123, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  get url(): string {
    return this.#url;
  }

  static async start(): Promise<OtlpReceiver> {
    const receiver = new OtlpReceiver();
    await new Promise<void>((resolve) => receiver.#server.listen(0, '127.0.0.1', resolve));
    const address = receiver.#server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    receiver.#url = `http://127.0.0.1:${address.port}`;
    return receiver;
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  /** Waits until `found` gives something from what was received; fails after `timeoutMs`. */
  async waitFor<T>(what: string, found: () => T | undefined, timeoutMs = 10_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = found();
      if (value !== undefined) return value;
      if (Date.now() > deadline) {
        throw new Error(`no ${what} within ${timeoutMs} ms; received: ${this.spans.map((span) => span.name).join(', ') || 'nothing'}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

function decode(body: Buffer): ReceivedSpan[] {
  const data = JSON.parse(body.toString('utf8')) as {
    resourceSpans?: {
      resource?: { attributes?: OtlpAttribute[] };
      scopeSpans?: {
        scope?: { name?: string };
        spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: OtlpAttribute[] }[];
      }[];
    }[];
  };
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of data.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        spans.push({ ...span, attributes: attributesOf(span.attributes), scope: scopeSpans.scope?.name ?? '', resource });
      }
    }
  }
  return spans;
}

function attributesOf(attributes: OtlpAttribute[] = []): Record<string, unknown> {
  return Object.fromEntries(
    attributes.map(({ key, value }) => [
      key,
      value.stringValue ?? value.boolValue ?? (value.intValue === undefined ? value.doubleValue : Number(value.intValue)),
    ]),
  );
}
