import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OAuth2Client } from '@badgateway/oauth2-client';
import * as oidc from 'openid-client';
import { ClientCredentials } from 'simple-oauth2';
import { assertInvalidToken } from '../helpers/assert.js';
import { bearer, whoami } from '../helpers/http.js';
import { RecordingProxy, type RecordedRequest } from '../helpers/recording-proxy.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { OPERATOR } from '../../src/request-context.js';

/**
 * Standard OAuth2 client libraries against the real server, each in its documented default
 * configuration and with the other client authentication method, for both kinds of token: admin
 * (ClientID and ClientSecret) and anonymous (AppID and AppKey). They go through a proxy that records
 * what they send, so each test checks which client authentication the library really used, and
 * whoami checks what the token it got is. `PUBLIC_URL` is the proxy's URL, so metadata names it.
 */

type Method = 'client_secret_basic' | 'client_secret_post';

interface Kind {
  name: 'admin' | 'anonymous';
  clientId: string;
  clientSecret: string;
  /** The principal's id whoami answers. */
  id: string;
}

let proxy: RecordingProxy;
let server: TestServer;
let kinds: Kind[];
let admin: Kind;

before(async () => {
  proxy = new RecordingProxy();
  await proxy.start();
  server = await startServer({ publicUrl: proxy.baseUrl });
  proxy.target = server.baseUrl;
  admin = { name: 'admin', clientId: server.app.clientId, clientSecret: server.app.clientSecret, id: server.app.adminId };
  kinds = [admin, { name: 'anonymous', clientId: server.app.appId, clientSecret: server.app.appKey, id: 'ANONYMOUS' }];
});
after(async () => {
  await proxy.close();
  await server.close();
});

const appPath = () => `/api/apps/${server.app.appId}`;
const issuer = () => `${proxy.baseUrl}${appPath()}`;

/** The request used `method` to authenticate as `clientId` (RFC 6749 §2.3.1), and only that. */
function assertClientAuthentication(sent: RecordedRequest, method: Method, clientId: string): void {
  const fields = new URLSearchParams(sent.body);
  const context = `${sent.url}: ${JSON.stringify(sent.headers.authorization)} ${sent.body}`;
  if (method === 'client_secret_basic') {
    const header = sent.headers.authorization ?? '';
    assert.match(header, /^Basic /, context);
    const user = Buffer.from(header.slice('Basic '.length), 'base64').toString('utf8').split(':')[0]!;
    assert.equal(decodeURIComponent(user), clientId, context);
    assert.equal(fields.get('client_secret'), null, context);
  } else {
    assert.equal(sent.headers.authorization, undefined, context);
    assert.equal(fields.get('client_id'), clientId, context);
    assert.ok(fields.get('client_secret'), context);
  }
}

/** The token works, as the principal of its kind. */
async function assertTokenOf(kind: Kind, accessToken: string): Promise<void> {
  const me = await whoami(server.appUrl, bearer(accessToken));
  assert.equal(me.status, 200, me.text);
  assert.equal(me.body.principal, kind.name);
  assert.equal(me.body.id, kind.id);
}

async function assertRevoked(accessToken: string): Promise<void> {
  assertInvalidToken(await whoami(server.appUrl, bearer(accessToken)));
}

describe('openid-client (v6)', () => {
  const metadata = (): oidc.ServerMetadata => ({
    issuer: issuer(),
    token_endpoint: `${issuer()}/oauth2/token`,
    revocation_endpoint: `${issuer()}/oauth2/revoke`,
    introspection_endpoint: `${issuer()}/oauth2/introspect`,
  });
  /** Its default with a client secret is client_secret_post; `allowInsecureRequests` for http://127.0.0.1, as its docs say. */
  const configure = (configuration: oidc.Configuration) => {
    oidc.allowInsecureRequests(configuration);
    return configuration;
  };
  const manual = (kind: Kind, method?: Method) =>
    configure(
      new oidc.Configuration(
        metadata(),
        kind.clientId,
        kind.clientSecret,
        method === 'client_secret_basic' ? oidc.ClientSecretBasic() : undefined,
      ),
    );
  const discovered = (kind: Kind, method?: Method) =>
    oidc.discovery(
      new URL(issuer()),
      kind.clientId,
      kind.clientSecret,
      method === 'client_secret_basic' ? oidc.ClientSecretBasic() : undefined,
      {
        algorithm: 'oauth2',
        execute: [oidc.allowInsecureRequests],
      },
    );

  /** The client credentials grant, introspection by the resource server (admin credentials), revocation by the client itself. */
  async function lifecycle(kind: Kind, method: Method, client: oidc.Configuration, resourceServer: oidc.Configuration) {
    const tokens = await oidc.clientCredentialsGrant(client);
    assertClientAuthentication(proxy.last('/oauth2/token'), method, kind.clientId);
    assert.equal(tokens.token_type, 'bearer');
    assert.equal(tokens.expires_in, 2147483646);
    await assertTokenOf(kind, tokens.access_token);

    const introspection = await oidc.tokenIntrospection(resourceServer, tokens.access_token);
    assertClientAuthentication(proxy.last('/oauth2/introspect'), method, admin.clientId);
    assert.equal(introspection.active, true);
    assert.equal(introspection.principal, kind.name);
    assert.equal(introspection.client_id, kind.clientId);

    await oidc.tokenRevocation(client, tokens.access_token);
    assertClientAuthentication(proxy.last('/oauth2/revoke'), method, kind.clientId);
    await assertRevoked(tokens.access_token);
    assert.equal((await oidc.tokenIntrospection(resourceServer, tokens.access_token)).active, false);
  }

  for (const method of ['client_secret_post', 'client_secret_basic'] as const) {
    const label = method === 'client_secret_post' ? 'its default client_secret_post' : 'client_secret_basic';
    it(`manual metadata, ${label}: both kinds of token, introspection and revocation`, async () => {
      for (const kind of kinds) await lifecycle(kind, method, manual(kind, method), manual(admin, method));
    });

    it(`discovery() (RFC 8414, algorithm "oauth2"), ${label}: both kinds of token, introspection and revocation`, async () => {
      for (const kind of kinds) {
        const client = await discovered(kind, method);
        assert.equal(client.serverMetadata().issuer, issuer());
        await lifecycle(kind, method, client, await discovered(admin, method));
      }
    });
  }

  it('introspection with the anonymous client (AppID and AppKey) is refused: 403 ADMIN_REQUIRED', async () => {
    const anonymous = kinds[1]!;
    const token = (await oidc.clientCredentialsGrant(manual(anonymous))).access_token;
    await assert.rejects(oidc.tokenIntrospection(manual(anonymous), token), (error: unknown) => {
      assert.ok(error instanceof oidc.ResponseBodyError, String(error));
      assert.equal(error.status, 403);
      assert.equal(error.error, 'ADMIN_REQUIRED');
      return true;
    });
  });

  it('a wrong ClientSecret is refused with invalid_client, on the token endpoint and on introspection', async () => {
    const wrong = { ...admin, clientSecret: 'not-the-secret' };
    for (const method of ['client_secret_post', 'client_secret_basic'] as const) {
      for (const call of [
        (c: oidc.Configuration) => oidc.clientCredentialsGrant(c),
        (c: oidc.Configuration) => oidc.tokenIntrospection(c, 'x'),
      ]) {
        // A 401 with a WWW-Authenticate challenge: openid-client hands over the challenge and the answer.
        const error: unknown = await call(manual(wrong, method)).then(
          () => assert.fail('expected a rejection'),
          (rejection: unknown) => rejection,
        );
        assert.ok(error instanceof oidc.WWWAuthenticateChallengeError, String(error));
        assert.equal(error.status, 401);
        assert.equal(error.cause[0]?.scheme, 'basic');
        assert.equal(((await error.response.json()) as { error: string }).error, 'invalid_client');
      }
    }
  });
});

describe('simple-oauth2', () => {
  const client = (kind: Kind, authorizationMethod?: 'header' | 'body') =>
    new ClientCredentials({
      client: { id: kind.clientId, secret: kind.clientSecret },
      auth: { tokenHost: proxy.baseUrl, tokenPath: `${appPath()}/oauth2/token`, revokePath: `${appPath()}/oauth2/revoke` },
      ...(authorizationMethod === undefined ? {} : { options: { authorizationMethod } }),
    });

  for (const [authorizationMethod, method, label] of [
    [undefined, 'client_secret_basic', 'its default (the Authorization header)'],
    ['body', 'client_secret_post', 'authorizationMethod "body"'],
  ] as const) {
    it(`${label}: both kinds of token, and revocation (which reads the answer as JSON)`, async () => {
      for (const kind of kinds) {
        const accessToken = await client(kind, authorizationMethod).getToken({});
        assertClientAuthentication(proxy.last('/oauth2/token'), method, kind.clientId);
        const token = accessToken.token.access_token as string;
        await assertTokenOf(kind, token);
        assert.equal(accessToken.expired(), false);

        await accessToken.revoke('access_token');
        assertClientAuthentication(proxy.last('/oauth2/revoke'), method, kind.clientId);
        await assertRevoked(token);
      }
    });
  }

  it('getToken({ expiresAt }): an admin token of 15 minutes, as the README says to ask for', async () => {
    const asked = Date.now() + 900_000;
    const accessToken = await client(admin).getToken({ expiresAt: String(asked) });
    assert.ok(
      Number(accessToken.token.expires_in) > 890 && Number(accessToken.token.expires_in) <= 900,
      String(accessToken.token.expires_in),
    );
    const me = await whoami(`${proxy.baseUrl}${appPath()}`, bearer(accessToken.token.access_token as string));
    assert.equal(me.body.principal, 'admin');
    assert.equal(me.body.expiresAt, asked);
  });
});

describe('@badgateway/oauth2-client', () => {
  const endpoints = () => ({
    tokenEndpoint: `${appPath()}/oauth2/token`,
    revocationEndpoint: `${appPath()}/oauth2/revoke`,
    introspectionEndpoint: `${appPath()}/oauth2/introspect`,
  });
  const manual = (kind: Kind, authenticationMethod?: 'client_secret_post') =>
    new OAuth2Client({
      server: proxy.baseUrl,
      clientId: kind.clientId,
      clientSecret: kind.clientSecret,
      ...endpoints(),
      ...(authenticationMethod === undefined ? {} : { authenticationMethod }),
    });
  /** With the metadata, it takes the first method the server lists, as its docs say. */
  const discovered = (kind: Kind) =>
    new OAuth2Client({
      server: proxy.baseUrl,
      clientId: kind.clientId,
      clientSecret: kind.clientSecret,
      discoveryEndpoint: `/.well-known/oauth-authorization-server${appPath()}`,
    });

  async function lifecycle(kind: Kind, method: Method, client: OAuth2Client, resourceServer: OAuth2Client) {
    const token = await client.clientCredentials();
    assertClientAuthentication(proxy.last('/oauth2/token'), method, kind.clientId);
    await assertTokenOf(kind, token.accessToken);

    const introspection = await resourceServer.introspect(token);
    assertClientAuthentication(proxy.last('/oauth2/introspect'), method, admin.clientId);
    assert.equal(introspection.active, true);
    assert.equal(introspection.client_id, kind.clientId);

    await client.revoke(token);
    assertClientAuthentication(proxy.last('/oauth2/revoke'), method, kind.clientId);
    await assertRevoked(token.accessToken);
  }

  it('its default (Basic in the Authorization header): both kinds of token, introspection and revocation', async () => {
    for (const kind of kinds) await lifecycle(kind, 'client_secret_basic', manual(kind), manual(admin));
  });

  it('client_secret_post: both kinds of token, introspection and revocation', async () => {
    for (const kind of kinds)
      await lifecycle(kind, 'client_secret_post', manual(kind, 'client_secret_post'), manual(admin, 'client_secret_post'));
  });

  it('with discovery (RFC 8414): both kinds of token, introspection and revocation', async () => {
    for (const kind of kinds) await lifecycle(kind, 'client_secret_basic', discovered(kind), discovered(admin));
    assert.equal(proxy.last(`/.well-known/oauth-authorization-server${appPath()}`).method, 'GET');
  });
});

describe('a credential asking for a scope (RFC 6749 section 3.3), with each library', () => {
  let credential: Kind;
  before(async () => {
    const created = await server.tessera.credentials.create(
      server.app.appId,
      { name: 'Reports', scopes: ['reports:read', 'reports:write', 'events:read'] },
      OPERATOR,
    );
    credential = { name: 'admin', clientId: created.clientId, clientSecret: created.clientSecret, id: server.app.adminId };
  });

  /**
   * The token request sent `scope` as asked, and whoami says the token has that scope; so does the
   * token answer's `scope`, where the library hands it over (`'not handed over'` where it does not).
   */
  async function assertScoped(accessToken: string, answeredScope: unknown): Promise<void> {
    assert.equal(new URLSearchParams(proxy.last('/oauth2/token').body).get('scope'), 'reports:read');
    if (answeredScope !== 'not handed over') assert.equal(answeredScope, 'reports:read');
    await assertTokenOf(credential, accessToken);
    const me = await whoami(server.appUrl, bearer(accessToken));
    assert.equal(me.body.scope, 'reports:read');
    assert.equal(me.body.clientId, credential.clientId);
  }

  it('openid-client: clientCredentialsGrant with scope; more than the credential has is invalid_scope', async () => {
    const configuration = new oidc.Configuration(
      { issuer: issuer(), token_endpoint: `${issuer()}/oauth2/token` },
      credential.clientId,
      credential.clientSecret,
    );
    oidc.allowInsecureRequests(configuration);
    const tokens = await oidc.clientCredentialsGrant(configuration, { scope: 'reports:read' });
    await assertScoped(tokens.access_token, tokens.scope);
    await assert.rejects(oidc.clientCredentialsGrant(configuration, { scope: 'configuration:write' }), (error: unknown) => {
      assert.ok(error instanceof oidc.ResponseBodyError, String(error));
      assert.equal(error.status, 400);
      assert.equal(error.error, 'invalid_scope');
      return true;
    });
  });

  it('simple-oauth2: getToken({ scope }); more than the credential has is invalid_scope', async () => {
    const client = new ClientCredentials({
      client: { id: credential.clientId, secret: credential.clientSecret },
      auth: { tokenHost: proxy.baseUrl, tokenPath: `${appPath()}/oauth2/token` },
    });
    const accessToken = await client.getToken({ scope: 'reports:read' });
    await assertScoped(accessToken.token.access_token as string, accessToken.token.scope);
    await assert.rejects(client.getToken({ scope: ['reports:read', 'app:read'] }), (error: any) => {
      assert.equal(error.output?.statusCode, 400);
      assert.equal(error.data?.payload?.error, 'invalid_scope');
      return true;
    });
  });

  it('@badgateway/oauth2-client: clientCredentials({ scope }); more than the credential has is invalid_scope', async () => {
    const client = new OAuth2Client({
      server: proxy.baseUrl,
      clientId: credential.clientId,
      clientSecret: credential.clientSecret,
      tokenEndpoint: `${appPath()}/oauth2/token`,
    });
    const token = await client.clientCredentials({ scope: ['reports:read'] });
    // Its OAuth2Token has no scope field.
    await assertScoped(token.accessToken, 'not handed over');
    await assert.rejects(client.clientCredentials({ scope: ['tokens:revoke'] }), (error: any) => {
      assert.equal(error.httpCode, 400);
      assert.equal(error.oauth2Code, 'invalid_scope');
      return true;
    });
  });
});
