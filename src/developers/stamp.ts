import type { RequestContext } from '../request-context.js';
import type { DeveloperActor, NewDeveloperEvent } from './events.js';

/**
 * Who, when and from where, for an event of a developer's account log. The operator is the CLI;
 * anyone else is the developer: signed in, or holding the developer's one-time link.
 */
export function developerStamp(developerId: string, at: number, context: RequestContext): Omit<NewDeveloperEvent, 'type' | 'details'> {
  const actor: DeveloperActor = context.by === 'operator' ? 'operator' : 'developer';
  return { developerId, at, actor, clientAddress: context.clientAddress };
}
