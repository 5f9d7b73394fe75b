import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request a receiver got: its headers, body, and what the `standardwebhooks` library made of it. */
export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** The payload the library verified with the receiver's secret, or undefined when it refused it. */
  verified: unknown;
  /** Why the library refused it. */
  refused: string | undefined;
}

/** What the receiver answers its `n`th request (0 first): a status, a redirect, or no answer at all. */
export type Answer = { status: number; location?: string; body?: string } | 'hang';

/**
 * A webhook receiver on 127.0.0.1, as an app's backend would run one: it verifies each request with
 * the Standard Webhooks reference library, given the secret(s) the test set, and answers as told.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  secrets: string[] = [];
  answer: (n: number) => Answer = () => ({ status: 204 });
  readonly #hanging: ServerResponse[] = [];
  readonly #waiters: { count: number; resolve: () => void }[] = [];
  readonly #server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let verified: unknown;
      let refused: string | undefined;
      for (const secret of this.secrets) {
        try {
          verified = new Webhook(secret).verify(body, request.headers as Record<string, string>);
          refused = undefined;
          break;
        } catch (error) {
          refused = (error as Error).message;
        }
      }
      const answer = this.answer(this.received.length);
      this.received.push({ headers: request.headers, body, verified, refused });
      for (const waiter of [...this.#waiters]) {
        if (this.received.length >= waiter.count) {
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
      if (answer === 'hang') {
        this.#hanging.push(response);
        return;
      }
      response.writeHead(answer.status, answer.location === undefined ? {} : { location: answer.location });
      response.end(answer.body ?? '');
    });
  });

  url = '';

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/hooks`;
    return this;
  }

  /** Resolves once `count` requests in all were received, or rejects after `ms`. */
  receivedAtLeast(count: number, ms = 10_000): Promise<void> {
    if (this.received.length >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the receiver got ${this.received.length} requests of ${count} within ${ms} ms`)),
        ms,
      );
      this.#waiters.push({
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  /** The verified CloudEvents, in the order received. */
  events(): { id: string; type: string; source: string; data: { id: string; details: Record<string, unknown> } }[] {
    return this.received.filter((each) => each.verified !== undefined).map((each) => each.verified as never);
  }

  async close(): Promise<void> {
    for (const response of this.#hanging) response.destroy();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
