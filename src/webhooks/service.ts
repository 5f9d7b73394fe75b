import type { AppAccess } from '../app-access.js';
import type { NewAuditEvent } from '../events/event.js';
import type { EventLog } from '../events/log.js';
import type { KeyEncryption } from '../jwt/key-encryption.js';
import { claimOnce, onceClaim, type OnceClaimStore } from '../once-claims.js';
import { actingDetails, type RequestContext } from '../request-context.js';
import type { Capabilities } from '../upgrade/capabilities.js';
import type { AppStore } from '../apps/store.js';
import type { Clock } from 'tessera-tokens/internal/clock.js';
import { appNotFound, notFound } from 'tessera-tokens/internal/error-catalogue.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { Transactional } from 'tessera-tokens/internal/transaction.js';
import { checkDestination, parseWebhookUrl, type DestinationPolicy } from './destination.js';
import { generateWebhookSecret } from './signature.js';
import type { WebhookStore } from './store.js';
import {
  describeDelivery,
  describeWebhook,
  MAX_WEBHOOKS_PER_APP,
  newWebhookId,
  parseWebhookEventTypes,
  PREVIOUS_SECRET_SIGNS_MS,
  type DeliveryDescription,
  type WebhookDescription,
  type WebhookRecord,
} from './webhook.js';

/** What a webhook's change writes in its transaction. */
export interface WebhookTables {
  readonly apps: Pick<AppStore, 'lock'>;
  readonly webhooks: WebhookStore;
  readonly events: { append(batch: readonly NewAuditEvent[]): Promise<void> };
  readonly onceClaims: OnceClaimStore;
}

/** The fields of a new webhook, as the API, the CLI and the portal give them (checked by `create`). */
export interface NewWebhookFields {
  url?: unknown;
  eventTypes?: unknown;
}

/** A webhook made or given a new secret: the secret appears here, once. */
export interface WebhookWithSecret {
  webhook: WebhookDescription;
  secret: string;
}

/** The most deliveries a page of them lists. */
export const MAX_DELIVERY_PAGE = 100;

/**
 * The secrets of webhooks at rest: encrypted under the key-encryption key, as the private JWT keys
 * are, with the webhook's id bound in (a secret copied to another webhook's row does not decrypt).
 */
export class WebhookSecrets {
  constructor(private readonly encryption: KeyEncryption | undefined) {}

  seal(webhookId: string, secret: string): Buffer {
    return this.#encryption().encrypt(Buffer.from(secret), webhookId);
  }

  open(webhookId: string, sealed: Buffer): string {
    return this.#encryption().decrypt(sealed, webhookId, `The secret of webhook ${webhookId}`).toString();
  }

  #encryption(): KeyEncryption {
    if (this.encryption === undefined) {
      throw new TesseraError(
        'SERVICE_UNAVAILABLE',
        'Webhooks need the key their secrets are encrypted with: the operator sets KEY_ENCRYPTION_KEY (docs/deployment.md).',
      );
    }
    return this.encryption;
  }
}

/**
 * An app's webhooks (docs/webhooks.md): made, listed, given a new secret and deleted by the
 * operator, the app's owner, or an admin token with `webhooks:manage` (`manage_webhooks`); each
 * change recorded as an audit event in its own transaction. Their deliveries are written by the
 * database with each event and sent by `WebhookSender`.
 */
export class WebhookService {
  constructor(
    private readonly store: Transactional<WebhookTables> & { readonly webhooks: WebhookStore; readonly apps: Pick<AppStore, 'findById'> },
    private readonly clock: Clock,
    private readonly events: EventLog,
    private readonly access: AppAccess,
    private readonly capabilities: Capabilities,
    private readonly secrets: WebhookSecrets,
    private readonly policy: DestinationPolicy,
    /** Told when deliveries were made due by hand, so that they are sent at once. */
    private readonly onDue: () => void = () => {},
  ) {}

  async list(appId: string, context: RequestContext): Promise<WebhookDescription[]> {
    await this.#authorize(appId, context);
    return (await this.store.webhooks.listOf(appId)).map(describeWebhook);
  }

  async get(appId: string, webhookId: string, context: RequestContext): Promise<WebhookDescription> {
    await this.#authorize(appId, context);
    return describeWebhook(await this.#webhook(appId, webhookId));
  }

  /** With `once` (a form's once value), made only if it claims it: `CONFLICT` if it was claimed before. */
  async create(appId: string, fields: NewWebhookFields, context: RequestContext, once?: string): Promise<WebhookWithSecret> {
    await this.#authorize(appId, context);
    const url = parseWebhookUrl(fields.url, this.policy);
    const eventTypes = parseWebhookEventTypes(fields.eventTypes);
    await this.capabilities.require('webhooks');
    await checkDestination(url, this.policy);
    const secret = generateWebhookSecret();
    const stamp = await this.events.stamp(appId, context);
    const id = newWebhookId();
    const record: WebhookRecord = {
      id,
      appId,
      url: url.href,
      eventTypes,
      secret: this.secrets.seal(id, secret),
      previousSecret: null,
      previousSecretUntil: null,
      createdAt: stamp.at,
    };
    const claim = once === undefined ? undefined : onceClaim(once, stamp.at);
    await this.store.transaction(async (tx) => {
      // Creations for one app take turns (the app's row is held), so that several at once cannot pass the limit together.
      if ((await tx.apps.lock(appId, 'NO KEY UPDATE')) === undefined) throw appNotFound();
      if ((await tx.webhooks.countOf(appId)) >= MAX_WEBHOOKS_PER_APP) {
        throw new TesseraError(
          'CONFLICT',
          `This app has ${MAX_WEBHOOKS_PER_APP} webhooks, as many as an app may have; delete one it no longer needs first.`,
        );
      }
      await claimOnce(tx.onceClaims, claim);
      await tx.webhooks.insert(record);
      await tx.events.append([
        { ...stamp, type: 'webhook.created', details: { webhookId: id, url: record.url, eventTypes, ...actingDetails(context) } },
      ]);
    });
    return { webhook: describeWebhook(record), secret };
  }

  async delete(appId: string, webhookId: string, context: RequestContext): Promise<WebhookDescription> {
    await this.#authorize(appId, context);
    const webhook = await this.#webhook(appId, webhookId);
    const stamp = await this.events.stamp(appId, context);
    await this.store.transaction(async (tx) => {
      // Deleted first, so that its own event is not sent to it.
      if ((await tx.webhooks.delete(appId, webhookId)) === undefined) throw webhookNotFound();
      await tx.events.append([{ ...stamp, type: 'webhook.deleted', details: { webhookId, url: webhook.url, ...actingDetails(context) } }]);
    });
    return describeWebhook(webhook);
  }

  /**
   * A new secret, shown once; the one it replaces still signs beside it for
   * `PREVIOUS_SECRET_SIGNS_MS` (each delivery then carries both signatures), so that receivers can
   * take the new one without missing a delivery.
   */
  async rotateSecret(appId: string, webhookId: string, context: RequestContext, once?: string): Promise<WebhookWithSecret> {
    await this.#authorize(appId, context);
    const webhook = await this.#webhook(appId, webhookId);
    const secret = generateWebhookSecret();
    const stamp = await this.events.stamp(appId, context);
    const previousSecretUntil = stamp.at + PREVIOUS_SECRET_SIGNS_MS;
    const claim = once === undefined ? undefined : onceClaim(once, stamp.at);
    await this.store.transaction(async (tx) => {
      await claimOnce(tx.onceClaims, claim);
      const sealed = this.secrets.seal(webhookId, secret);
      if ((await tx.webhooks.replaceSecret(appId, webhookId, sealed, webhook.secret, previousSecretUntil)) === undefined) {
        throw webhookNotFound();
      }
      await tx.events.append([
        {
          ...stamp,
          type: 'webhook.secret_rotated',
          details: { webhookId, url: webhook.url, previousSecretUntil, ...actingDetails(context) },
        },
      ]);
    });
    return { webhook: describeWebhook({ ...webhook, previousSecretUntil }), secret };
  }

  /** The webhook's deliveries, newest first, `limit` at a time below `before` (the previous page's `nextCursor`). */
  async deliveries(
    appId: string,
    webhookId: string,
    page: { before?: number | undefined; limit: number },
    context: RequestContext,
  ): Promise<{ deliveries: DeliveryDescription[]; nextCursor: string | null }> {
    await this.#authorize(appId, context);
    await this.#webhook(appId, webhookId);
    const limit = Math.min(Math.max(page.limit, 1), MAX_DELIVERY_PAGE);
    const found = await this.store.webhooks.listDeliveries(appId, webhookId, page.before, limit + 1);
    const deliveries = found.slice(0, limit);
    return {
      deliveries: deliveries.map(describeDelivery),
      nextCursor: found.length > limit ? String(deliveries.at(-1)!.id) : null,
    };
  }

  /** Sends a delivery again (one that failed, or any): due now, with a new round of attempts. */
  async resend(appId: string, webhookId: string, deliveryId: number, context: RequestContext): Promise<void> {
    await this.#authorize(appId, context);
    if ((await this.store.webhooks.resend(appId, webhookId, deliveryId, this.clock.now())) === undefined) {
      throw new TesseraError('NOT_FOUND', 'This webhook has no delivery of this id.');
    }
    this.onDue();
  }

  /**
   * Who may manage the app's webhooks (`manage_webhooks`). An admin token of a credential also needs
   * its `webhooks:manage` to have been given by someone who may manage them: the operator, the
   * owner, the app's own ClientID, or a credential that itself may. A release before 0.4.0 took
   * `webhooks:manage` for a scope of the app's own, which a collaborator could give; such a
   * credential gets nothing from it here.
   */
  async #authorize(appId: string, context: RequestContext): Promise<void> {
    await this.access.authorize(appId, 'manage_webhooks', context);
    const { by } = context;
    if (by === null || by === 'operator' || by.kind !== 'admin' || by.scopes === null || by.clientId === null) return;
    const app = await this.store.apps.findById(appId);
    if (app === undefined) throw appNotFound();
    let clientId = by.clientId;
    for (let depth = 0; depth < 50 && clientId !== app.clientId; depth++) {
      const credential = app.credentials.find((candidate) => candidate.clientId === clientId);
      if (credential === undefined || !credential.scopes.includes('webhooks:manage')) break;
      const maker = credential.createdBy;
      if (maker.kind === 'operator') return;
      if (maker.kind === 'developer') {
        if (await this.access.mayDeveloper(appId, maker.developerId, 'manage_webhooks')) return;
        break;
      }
      clientId = maker.clientId;
    }
    if (clientId === app.clientId) return;
    throw new TesseraError(
      'FORBIDDEN',
      'This credential\u2019s webhooks:manage was not given by someone who may manage webhooks (the operator, the owner, or an admin token that may): make a new credential for it.',
    );
  }

  async #webhook(appId: string, webhookId: string): Promise<WebhookRecord> {
    const found = await this.store.webhooks.find(appId, webhookId);
    if (found === undefined) throw webhookNotFound();
    return found;
  }
}

function webhookNotFound(): TesseraError {
  const error = notFound();
  return new TesseraError(error.code, 'This app has no webhook of this id.');
}
