import type { WebhookWithSecret } from '../webhooks/service.js';
import type { WebhookDescription } from '../webhooks/webhook.js';
import { OPERATOR } from '../request-context.js';
import type { Tessera } from '../tessera.js';
import { listFlag, stringFlag, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Output } from './output.js';

export const WEBHOOKS_FLAGS: FlagSpec = {
  url: true,
  event: 'repeatable',
};

const USAGE =
  'usage: tessera webhooks create APP_ID --url URL [--event TYPE]… [--json]\n' +
  '       tessera webhooks list APP_ID [--json]\n' +
  '       tessera webhooks rotate-secret APP_ID WEBHOOK_ID [--json]\n' +
  '       tessera webhooks delete APP_ID WEBHOOK_ID [--json]';

/** `tessera webhooks <verb>`: an app's webhooks (docs/webhooks.md). */
export async function runWebhooksCommand(tessera: Tessera, command: ParsedCommand, out: Output): Promise<void> {
  const [verb, appId, webhookId, ...extra] = command.positionals;
  if (appId === undefined || extra.length > 0) throw new UsageError(USAGE);
  const forCreate = ['url', 'event'].filter((flag) => command.flags[flag] !== undefined);
  if (verb !== 'create' && forCreate.length > 0) throw new UsageError(`--${forCreate[0]} is for tessera webhooks create`);
  switch (verb) {
    case 'create': {
      if (webhookId !== undefined) throw new UsageError(USAGE);
      const events = listFlag(command, 'event');
      const created = await tessera.webhooks.create(
        appId,
        { url: stringFlag(command, 'url'), ...(events.length === 0 ? {} : { eventTypes: events }) },
        OPERATOR,
      );
      return out.result(created, () => describeWithSecret(created, 'Created webhook'));
    }
    case 'list': {
      if (webhookId !== undefined) throw new UsageError(USAGE);
      const webhooks = await tessera.webhooks.list(appId, OPERATOR);
      return out.result(webhooks, () => (webhooks.length === 0 ? `App ${appId} has no webhooks.` : webhooks.flatMap(describe)));
    }
    case 'rotate-secret': {
      if (webhookId === undefined) throw new UsageError(USAGE);
      const rotated = await tessera.webhooks.rotateSecret(appId, webhookId, OPERATOR);
      return out.result(rotated, () => [
        ...describeWithSecret(rotated, 'New secret for webhook'),
        `The previous secret signs beside it until ${rotated.webhook.previousSecretUntil}: update the receiver before then.`,
      ]);
    }
    case 'delete': {
      if (webhookId === undefined) throw new UsageError(USAGE);
      const deleted = await tessera.webhooks.delete(appId, webhookId, OPERATOR);
      return out.result(deleted, () => `Deleted webhook ${deleted.id} (${deleted.url}); its deliveries not yet sent are dropped.`);
    }
    default:
      throw new UsageError(USAGE);
  }
}

function describeWithSecret({ webhook, secret }: WebhookWithSecret, what: string): string[] {
  return [
    `${what} ${webhook.id}. Its secret is shown this once: give it to the receiver, which verifies each delivery with it.`,
    `  Secret       ${secret}`,
    ...details(webhook),
  ];
}

function describe(webhook: WebhookDescription): string[] {
  return [webhook.id, ...details(webhook)];
}

function details(webhook: WebhookDescription): string[] {
  return [`  URL          ${webhook.url}`, `  Events       ${webhook.eventTypes.join(' ')}`, `  Created      ${webhook.createdAt}`];
}
