import { DEFAULT_APP_CONFIGURATION, type AppConfiguration, type AppRecord } from '../../src/apps/app.js';
import { generateAppKeys, type AppKeys } from '../../src/apps/keys.js';
import { clientSecretDigest } from '../../src/crypto.js';
import type { TestServer } from './server.js';

/**
 * There is no API (HTTP, CLI or AppService) to change an app's configuration yet, so an app with a
 * given configuration is written straight into the server's store, the way AppService.create writes
 * one. Returns its four keys and admin id, like `server.app`.
 */
export async function createConfiguredApp(
  server: TestServer,
  configuration: Partial<AppConfiguration>,
  name = 'Configured app',
): Promise<AppKeys & { appUrl: string }> {
  const keys = generateAppKeys();
  const record: AppRecord = {
    appId: keys.appId,
    name,
    appKey: keys.appKey,
    clientId: keys.clientId,
    clientSecretHash: clientSecretDigest(keys.clientSecret),
    adminId: keys.adminId,
    createdAt: server.tessera.clock.now(),
    configuration: { ...DEFAULT_APP_CONFIGURATION, ...configuration },
  };
  await server.tessera.store.apps.insert(record);
  return { ...keys, appUrl: `${server.baseUrl}/api/apps/${keys.appId}` };
}
