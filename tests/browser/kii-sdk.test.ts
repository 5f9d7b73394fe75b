import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { OPERATOR } from '../../src/request-context.js';
import { browserForSuite } from '../helpers/browser.js';
import { serverForSuite } from '../helpers/server.js';

// The kii-cloud-sdk browser bundle in a page of another origin: `Kii.authenticateAsAppAdmin` asks
// the SDK token path (`/api/oauth2/token`, the app in X-Kii-AppID), whose preflight cannot name the
// app, and gets the seed's rule 2 as a clear error it can read.

const require = createRequire(import.meta.url);

const browser = browserForSuite(async () => {
  browser.serveFile('/KiiSDK.js', require.resolve('kii-cloud-sdk/KiiSDK.js'), 'text/javascript');
});
const server = serverForSuite({}, () => server.tessera.apps.configure(server.app.appId, { allowedOrigins: [browser.origin] }, OPERATOR));

const SDK_PAGE = '<!doctype html>\n<meta charset="utf-8">\n<title>A web app with the Kii SDK</title>\n<script src="/KiiSDK.js"></script>\n';

/** `Kii.authenticateAsAppAdmin` in the page: what the SDK resolves or rejects with. */
function authenticateAsAppAdmin(page: Page, clientId: string, clientSecret: string): Promise<string> {
  const args = [server.app.appId, server.app.appKey, `${server.baseUrl}/api`, clientId, clientSecret] as const;
  return page.evaluate(async ([appId, appKey, site, id, secret]) => {
    const { Kii } = globalThis as unknown as {
      Kii: {
        initializeWithSite(appId: string, appKey: string, site: string): void;
        authenticateAsAppAdmin(id: string, secret: string): Promise<unknown>;
      };
    };
    Kii.initializeWithSite(appId, appKey, site);
    return Kii.authenticateAsAppAdmin(id, secret).then(
      () => 'authenticated',
      (error: Error) => `rejected: ${error.message}`,
    );
  }, args);
}

describe('the kii-cloud-sdk browser bundle', () => {
  it('is refused an admin token with a clear error, on an origin the app lists, and the exposure is recorded', async () => {
    const page = await browser.openPage(SDK_PAGE);
    const outcome = await authenticateAsAppAdmin(page, server.app.clientId, server.app.clientSecret);
    assert.match(
      outcome,
      /^rejected: unauthorized_client: Admin tokens are not issued to browsers: the ClientSecret must stay in server-side code/,
    );
    await server.tessera.events.flush();
    const exposed = await server.tessera.events.list(server.app.appId, { type: 'app.secret_exposed', limit: 10 });
    assert.equal(exposed.events.length, 1);
  });

  it('cannot read the answer on an origin the app does not list', async () => {
    const page = await browser.openPage(SDK_PAGE, { origin: browser.otherOrigin });
    const outcome = await authenticateAsAppAdmin(page, server.app.clientId, 'wrong');
    assert.match(outcome, /^rejected: /);
    assert.doesNotMatch(outcome, /unauthorized_client/);
  });

  it('makes its anonymous calls (X-Kii-AppID and X-Kii-AppKey, no token): authenticated, and the page reads the answer', async () => {
    const query = (page: Page, appKey: string) =>
      page.evaluate(
        async ([appId, key, site]) => {
          const { Kii, KiiQuery } = globalThis as unknown as {
            Kii: {
              initializeWithSite(appId: string, appKey: string, site: string): void;
              bucketWithName(name: string): { executeQuery(query: unknown): Promise<unknown> };
            };
            KiiQuery: { queryWithClause(clause: null): unknown };
          };
          Kii.initializeWithSite(appId, key, site);
          return Kii.bucketWithName('notes')
            .executeQuery(KiiQuery.queryWithClause(null))
            .then(
              () => 'resolved',
              (error: Error) => `rejected: ${error.message}`,
            );
        },
        [server.app.appId, appKey, `${server.baseUrl}/api`] as const,
      );
    const page = await browser.openPage(SDK_PAGE);
    // Buckets are the rest of the backend's: Tessera authenticates the call, then has no such path.
    assert.match(await query(page, server.app.appKey), /^rejected: NOT_FOUND: /);
    const other = await browser.openPage(SDK_PAGE, { origin: browser.otherOrigin });
    assert.doesNotMatch(await query(other, server.app.appKey), /NOT_FOUND|UNAUTHORIZED/, 'an origin the app does not list reads nothing');
  });
});
