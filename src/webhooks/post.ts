import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { checkedLookup, DestinationRefused, isNotPublic, type DestinationPolicy } from './destination.js';
import { MAX_RESPONSE_EXCERPT } from './webhook.js';

/** How long an attempt may take, from connecting to the end of the answer's excerpt. */
export const DELIVERY_TIMEOUT_MS = 10_000;

/** What a receiver did with one attempt: its status (null: none came), the start of its answer, or why it failed. */
export interface PostResult {
  status: number | null;
  excerpt: string | null;
  /** Null for a 2xx. */
  error: string | null;
}

/**
 * POSTs one delivery: to the address the checked lookup allows (`destination.ts`; an address given
 * as such is checked here, as no lookup is made for it), on a connection of its own, following no
 * redirect, reading at most `MAX_RESPONSE_EXCERPT` bytes of the answer, within `timeoutMs`. Never throws.
 */
export async function postDelivery(
  url: string,
  headers: Record<string, string>,
  body: string,
  policy: DestinationPolicy,
  timeoutMs = DELIVERY_TIMEOUT_MS,
): Promise<PostResult> {
  const target = new URL(url);
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host) !== 0 && !policy.allowPrivate && isNotPublic(host)) {
    return {
      status: null,
      excerpt: null,
      error: `${host} is not a public address (the operator allows private addresses with WEBHOOK_ALLOW_PRIVATE=1)`,
    };
  }
  const signal = AbortSignal.timeout(timeoutMs);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<PostResult>((resolve) => {
    let settled = false;
    const done = (result: PostResult) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    const outgoing = send(target, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      lookup: checkedLookup(policy),
      agent: false,
      signal,
    });
    outgoing.on('response', (answer: IncomingMessage) => {
      const status = answer.statusCode ?? null;
      const chunks: Buffer[] = [];
      let length = 0;
      const finish = () => {
        const excerpt = Buffer.concat(chunks).subarray(0, MAX_RESPONSE_EXCERPT).toString('utf8');
        answer.destroy();
        done({ status, excerpt: excerpt === '' ? null : excerpt, error: errorOf(status, answer.headers.location) });
      };
      answer.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        length += chunk.length;
        if (length >= MAX_RESPONSE_EXCERPT) finish();
      });
      answer.on('end', finish);
      answer.on('error', finish);
    });
    outgoing.on('error', (error: NodeJS.ErrnoException) => {
      done({ status: null, excerpt: null, error: failureText(error, signal, timeoutMs) });
    });
    outgoing.end(body);
  });
}

function errorOf(status: number | null, location: string | undefined): string | null {
  if (status !== null && status >= 200 && status < 300) return null;
  if (status !== null && status >= 300 && status < 400) {
    return `the receiver answered ${status}, a redirect${location === undefined ? '' : ` to ${location.slice(0, 200)}`}, which is not followed`;
  }
  return `the receiver answered ${status ?? 'nothing'}`;
}

function failureText(error: NodeJS.ErrnoException, signal: AbortSignal, timeoutMs: number): string {
  if (signal.aborted) return `no answer within ${timeoutMs / 1000} s`;
  if (error instanceof DestinationRefused) return `${error.message} (the operator allows private addresses with WEBHOOK_ALLOW_PRIVATE=1)`;
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof DestinationRefused) return `${cause.message} (the operator allows private addresses with WEBHOOK_ALLOW_PRIVATE=1)`;
  return `the connection failed: ${error.code ?? error.message}`;
}
