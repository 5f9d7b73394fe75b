import type { AppConfiguration } from 'tessera-tokens/internal/apps/app.js';
import type { AppAccessKeys } from '../../src/apps/access-keys.js';
import { OPERATOR } from '../../src/request-context.js';
import { appOn } from './http.js';
import type { TestServer } from './server.js';

/** A new app of the server with the given configuration; its four keys and admin id, like `server.app`. */
export async function createConfiguredApp(
  server: TestServer,
  configuration: Partial<AppConfiguration>,
  name = 'Configured app',
): Promise<AppAccessKeys & { appUrl: string }> {
  const created = await server.tessera.apps.create(name);
  if (Object.keys(configuration).length > 0) await server.tessera.apps.configure(created.appId, configuration, OPERATOR);
  return appOn(server, created);
}
