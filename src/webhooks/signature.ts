import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures as the Standard Webhooks specification has them (what the `standardwebhooks`
 * and `svix` libraries verify): a secret `whsec_` + base64 of its bytes; each delivery sends
 * `webhook-id` (the message's id, the same on every retry: receivers drop duplicates by it),
 * `webhook-timestamp` (UNIX seconds of this attempt) and `webhook-signature`, `v1,` + base64 of the
 * HMAC-SHA256 of `{id}.{timestamp}.{body}` under the secret's bytes; during a secret's rotation one
 * signature per secret, space-separated, so that a receiver with either verifies.
 */
export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

export function generateWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** The key bytes of a `whsec_` secret. */
function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** The headers of one attempt: `secrets` the current one first, then one being rotated out. */
export function signWebhook(messageId: string, timestampSeconds: number, body: string, secrets: readonly string[]): SignedHeaders {
  const content = `${messageId}.${timestampSeconds}.${body}`;
  const signatures = secrets.map((secret) => `v1,${createHmac('sha256', keyOf(secret)).update(content).digest('base64')}`);
  return { 'webhook-id': messageId, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': signatures.join(' ') };
}

/** Whether one of `headers`' signatures is `secret`'s (the tests' receivers use the libraries; this is for the docs' example and the CLI). */
export function verifiesWith(headers: SignedHeaders, body: string, secret: string): boolean {
  const expected = createHmac('sha256', keyOf(secret)).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`).digest();
  return headers['webhook-signature'].split(' ').some((signature) => {
    const [version, value] = signature.split(',');
    if (version !== 'v1' || value === undefined) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
