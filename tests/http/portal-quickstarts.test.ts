import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { OPERATOR } from '../../src/request-context.js';
import { bearer, whoami } from '../helpers/http.js';
import { addCollaborator, createDeveloper } from '../helpers/portal.js';
import { portalClient, signInOverHttp, type PortalClient } from '../helpers/portal-http.js';
import { assertRan, decodeHtml, runBash, runNode, snippetOf, type RunResult } from '../helpers/portal-quickstarts.js';
import { findExecutable } from '../helpers/process.js';
import { serverForSuite, startServer } from '../helpers/server.js';

// The quickstarts of the new-app page and of each app's overview, as a developer uses them: each
// snippet taken out of the page and run against the server as it is (node, bash with curl), with
// the ClientSecret where the page says it goes; and the form beside the web page that adds the
// page's origin to the app's allowed origins. On both stores.

const server = serverForSuite();

interface NewApp {
  appId: string;
  appKey: string;
  clientId: string;
  clientSecret: string;
  /** The new-app page (the answer to the form, 201), and the app's overview. */
  created: string;
  overview: string;
}

let owner: PortalClient;

/** Creates an app through the new-app form, as `client`, and reads its keys off the answer. */
async function createApp(client: PortalClient, name: string): Promise<NewApp> {
  const form = await client.page('/portal/apps/new');
  const answer = await client.post('/portal/apps', { _csrf: form.csrf, once: form.once!, name });
  assert.equal(answer.status, 201, answer.text.slice(0, 500));
  const key = (which: string) => decodeHtml(new RegExp(`<code data-key="${which}">([^<]+)</code>`).exec(answer.text)![1]!);
  const appId = key('appId');
  const overview = await client.page(`/portal/apps/${appId}`);
  return {
    appId,
    appKey: key('appKey'),
    clientId: key('clientId'),
    clientSecret: key('clientSecret'),
    created: answer.text,
    overview: overview.text,
  };
}

/** What a Node snippet printed with `console.log` of whoami's answer: the object's fields, as Node shows them. */
function whoamiPrinted(output: string): { principal: string; auth: string; expiresAt: number | null } {
  const principal = /principal: '([a-z]+)'/.exec(output)?.[1];
  const auth = /auth: '([a-z]+)'/.exec(output)?.[1];
  const expiresAt = /expiresAt: (null|[0-9]+)/.exec(output)?.[1];
  assert.ok(principal !== undefined && auth !== undefined && expiresAt !== undefined, `whoami printed:\n${output}`);
  return { principal, auth, expiresAt: expiresAt === 'null' ? null : Number(expiresAt) };
}

/** An instant 15 minutes after `startedAt`, give or take the run's own time. */
function assertFifteenMinutesOn(expiresAt: number | null, startedAt: number, what: string): void {
  assert.ok(expiresAt !== null, `${what}: the admin token never expires`);
  const from = startedAt + 900_000 - 1_000;
  const to = Date.now() + 900_000 + 1_000;
  assert.ok(expiresAt >= from && expiresAt <= to, `${what}: expires at ${expiresAt}, not 15 minutes on (${from} to ${to})`);
}

describe('the quickstarts', () => {
  let app: NewApp;
  before(async () => {
    await createDeveloper(server, 'owner@example.com');
    owner = await signInOverHttp(server, 'owner@example.com');
    app = await createApp(owner, 'Quickstart');
  });

  it("are on the new-app page and the overview, filled in with the app's values; the ClientSecret only on the new-app page", async () => {
    for (const [page, text] of [
      ['new app', app.created],
      ['overview', app.overview],
    ] as const) {
      assert.match(text, /<h2 id="quickstarts">Quickstarts<\/h2>/, page);
      const web = snippetOf(text, 'web');
      assert.ok(web.includes(`import { TesseraClient } from '${server.baseUrl}/tessera-client.js';`), web);
      for (const value of [`appId: '${app.appId}'`, `appKey: '${app.appKey}'`, "mode: 'anonymous'"]) assert.ok(web.includes(value), value);
      for (const name of ['node', 'openid-client', 'kii-cloud-sdk'] as const) {
        const code = snippetOf(text, name);
        assert.ok(code.includes(`'${app.clientId}'`), `${page}, ${name}: the ClientID`);
        assert.ok(code.includes('process.env.TESSERA_CLIENT_SECRET'), `${page}, ${name}: the ClientSecret from the environment`);
        assert.ok(!code.includes(app.clientSecret), `${page}, ${name}: never the ClientSecret in the code`);
      }
      const curl = snippetOf(text, 'curl');
      assert.ok(curl.startsWith(`APP_URL=${server.baseUrl}/api/apps/${app.appId}\n`), `${page}: curl's APP_URL`);
      assert.ok(
        curl.includes('--data-urlencode client_secret="$TESSERA_CLIENT_SECRET"'),
        `${page}: curl reads the ClientSecret from the environment`,
      );
      assert.ok(!curl.includes(app.clientSecret), `${page}: never the ClientSecret on a command line, where the shell's history keeps it`);
      assert.equal(
        snippetOf(text, 'set-secret'),
        "printf 'ClientSecret: ' && read -rs TESSERA_CLIENT_SECRET && echo && export TESSERA_CLIENT_SECRET",
        page,
      );
      assert.match(text, /<code class="run">node server\.mjs<\/code>/, `${page}: how to run it`);
      // Every quickstart can be opened without JavaScript, and each has its copy target (and the command that sets the secret).
      assert.equal(text.match(/<details class="quickstart"/g)?.length, 5, page);
      assert.equal(text.match(/data-copyable="[^"]+"/g)?.length, 6, page);
    }
    assert.equal(app.created.split(app.clientSecret).length, 2, 'the new-app page shows the ClientSecret once, among the keys');
    assert.ok(!app.overview.includes(app.clientSecret), 'the overview never shows the ClientSecret');
    // The module the web page imports is there, for any origin.
    const module = await fetch(`${server.baseUrl}/tessera-client.js`, { headers: { origin: 'http://localhost:5173' } });
    assert.equal(module.status, 200);
    assert.match(module.headers.get('content-type') ?? '', /javascript/);
    assert.match(await module.text(), /export class TesseraClient/);
  });

  it('Node server code with tessera-tokens/client runs: an admin token of 15 minutes, whoami and the app', async () => {
    for (const page of [app.created, app.overview]) {
      const startedAt = Date.now();
      const result = await runNode(snippetOf(page, 'node'), 'server.mjs', { TESSERA_CLIENT_SECRET: app.clientSecret });
      assertRan(result, 'server.mjs');
      const me = whoamiPrinted(result.stdout);
      assert.deepEqual([me.principal, me.auth], ['admin', 'bearer']);
      assertFifteenMinutesOn(me.expiresAt, startedAt, 'server.mjs');
      assert.match(result.stdout, /\nQuickstart \{/, 'the app, read with the admin token');
    }
  });

  it('Node server code without the ClientSecret in the environment fails, and says so', async () => {
    const result = await runNode(snippetOf(app.overview, 'node'), 'server.mjs');
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /clientSecret must be a non-empty string/);
  });

  it('openid-client runs: the client credentials grant sends expiresAt, and the token is an admin token of 15 minutes', async () => {
    for (const page of [app.created, app.overview]) {
      const startedAt = Date.now();
      const result = await runNode(snippetOf(page, 'openid-client'), 'oauth.mjs', { TESSERA_CLIENT_SECRET: app.clientSecret });
      assertRan(result, 'oauth.mjs');
      const expiresIn = Number(/^([0-9]+) /.exec(result.stdout)?.[1]);
      assert.ok(expiresIn >= 890 && expiresIn <= 900, `expires_in ${expiresIn}: openid-client did not send expiresAt\n${result.stdout}`);
      const me = whoamiPrinted(result.stdout);
      assert.deepEqual([me.principal, me.auth], ['admin', 'bearer']);
      assertFifteenMinutesOn(me.expiresAt, startedAt, 'oauth.mjs');
    }
  });

  it("the deployed SDK (kii-cloud-sdk) runs: a mobile app's own calls are Basic anonymous; Kii.authenticateAsAppAdmin gets an admin token that works", async () => {
    for (const page of [app.created, app.overview]) {
      const result = await runNode(snippetOf(page, 'kii-cloud-sdk'), 'sdk.mjs', { TESSERA_CLIENT_SECRET: app.clientSecret });
      assertRan(result, 'sdk.mjs');
      const [mobile, server] = result.stdout.split('server code:');
      assert.ok(mobile!.startsWith('mobile app:') && server !== undefined, result.stdout);
      assert.deepEqual(whoamiPrinted(mobile!), { principal: 'anonymous', auth: 'basic', expiresAt: null });
      const me = whoamiPrinted(server);
      // The SDK asks for no expiry, as the page says: the token lives as the app's settings allow.
      assert.deepEqual(me, { principal: 'admin', auth: 'bearer', expiresAt: null });
    }
  });

  it('curl, in bash: an admin token of 15 minutes and an anonymous token, which work; whoami in the three modes', async (t) => {
    if (findExecutable('curl') === undefined) return t.skip('no curl on PATH');
    for (const [page, env] of [
      ['new app', {}],
      ['overview', { TESSERA_CLIENT_SECRET: app.clientSecret }],
    ] as const) {
      const startedAt = Date.now();
      const text = page === 'new app' ? app.created : app.overview;
      // On the new-app page, as a person does: the command that sets the secret, the secret pasted
      // at its prompt, then the commands, in the same shell.
      const result: RunResult =
        page === 'new app'
          ? await runBash(`${snippetOf(text, 'set-secret')}\n${snippetOf(text, 'curl')}`, env, app.clientSecret)
          : await runBash(snippetOf(text, 'curl'), env);
      assertRan(result, `curl (${page})`);
      // The token answers, as `tee /dev/stderr` shows them (a terminal shows each on its line, after
      // the `echo` on standard output); the whoami answers on standard output.
      const tokens = (result.stderr.match(/\{[^{}]*\}/g) ?? []).map(
        (line) => JSON.parse(line) as { access_token: string; expires_in: number; id: string },
      );
      assert.equal(tokens.length, 2, `${page}: ${result.stderr}`);
      const [admin, anonymous] = tokens as [(typeof tokens)[0], (typeof tokens)[0]];
      // `date +%s` counts whole seconds, and the request comes a moment after it: a little under 900 s.
      assert.ok(admin.expires_in >= 890 && admin.expires_in <= 900, `${page}: the admin token lives ${admin.expires_in} s`);
      assert.equal(anonymous.id, 'ANONYMOUS');
      const answers = result.stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { principal: string; auth: string; expiresAt: number | null });
      assert.deepEqual(
        answers.map((me) => `${me.principal} ${me.auth}`),
        ['anonymous basic', 'anonymous bearer', 'admin bearer'],
        `${page}: ${result.stdout}`,
      );
      assertFifteenMinutesOn(answers[2]!.expiresAt, startedAt, `curl (${page})`);
      // The tokens the commands printed work, as what they are.
      const appUrl = `${server.baseUrl}/api/apps/${app.appId}`;
      assert.equal((await whoami(appUrl, bearer(admin.access_token))).body.principal, 'admin');
      assert.equal((await whoami(appUrl, bearer(anonymous.access_token))).body.principal, 'anonymous');
    }
  });

  it('curl on the overview without TESSERA_CLIENT_SECRET gets no admin token, and shows why', async (t) => {
    if (findExecutable('curl') === undefined) return t.skip('no curl on PATH');
    const result = await runBash(snippetOf(app.overview, 'curl'));
    assert.match(result.stderr, /"errorCode":"invalid_request",.*"message":"client_secret is required\."/);
    assert.match(result.stdout, /"principal":"anonymous","id":"ANONYMOUS","auth":"bearer"/);
  });

  it('on PUBLIC_URL when it is set: every snippet names it, and https asks openid-client for nothing insecure', async () => {
    const published = await startServer({ publicUrl: 'https://tessera.example.com' });
    try {
      await createDeveloper(published, 'owner@example.com');
      const client = await signInOverHttp(published, 'owner@example.com');
      const { created, overview } = await createApp(client, 'Published');
      for (const page of [created, overview]) {
        assert.ok(snippetOf(page, 'web').includes("from 'https://tessera.example.com/tessera-client.js'"));
        assert.ok(snippetOf(page, 'node').includes("baseUrl: 'https://tessera.example.com'"));
        assert.ok(snippetOf(page, 'openid-client').includes("const issuer = 'https://tessera.example.com/api/apps/"));
        assert.ok(!snippetOf(page, 'openid-client').includes('allowInsecureRequests'));
        assert.ok(snippetOf(page, 'curl').startsWith('APP_URL=https://tessera.example.com/api/apps/'));
        assert.ok(snippetOf(page, 'kii-cloud-sdk').includes("'https://tessera.example.com/api')"));
        assert.ok(!page.includes(published.baseUrl), 'nothing on the address the test used');
      }
    } finally {
      await published.close();
    }
  });
});

describe("the quickstarts' form that adds a web page's origin", () => {
  let app: NewApp;
  let csrf: string;
  const path = () => `/portal/apps/${app.appId}/allowed-origins`;
  const originsOf = async (appId = app.appId) => (await server.tessera.apps.show(appId, OPERATOR)).configuration.allowedOrigins;

  before(async () => {
    owner ??= await signInOverHttp(server, 'owner@example.com');
    app = await createApp(owner, 'Origins');
    csrf = (await owner.page(`/portal/apps/${app.appId}`)).csrf;
  });

  it('adds the origin, as browsers send it, to those there were; the overview lists it and says so', async () => {
    await server.tessera.apps.configure(app.appId, { allowedOrigins: ['https://shop.example.com'] }, OPERATOR);
    const added = await owner.post(path(), { _csrf: csrf, origin: ' HTTP://LocalHost:5173/ ' });
    assert.equal(added.status, 303, added.text);
    assert.equal(added.location, `/portal/apps/${app.appId}?done=origin-added#web-page-origins`);
    assert.deepEqual(await originsOf(), ['https://shop.example.com', 'http://localhost:5173']);
    const overview = await owner.page(added.location.replace(/#.*/, ''));
    assert.match(overview.text, /The origin is added: reload your page/);
    assert.match(overview.text, /data-allowed-origins><code>https:\/\/shop\.example\.com<\/code>, <code>http:\/\/localhost:5173<\/code>/);

    const again = await owner.post(path(), { _csrf: csrf, origin: 'http://localhost:5173' });
    assert.equal(again.location, `/portal/apps/${app.appId}?done=origin-listed#web-page-origins`);
    assert.deepEqual(await originsOf(), ['https://shop.example.com', 'http://localhost:5173'], 'not twice');
  });

  it('keeps every origin of developers adding theirs at the same moment', async () => {
    const busy = await createApp(owner, 'Busy');
    const form = await owner.page(`/portal/apps/${busy.appId}`);
    const origins = Array.from({ length: 12 }, (_, index) => `http://localhost:${5100 + index}`);
    const answers = await Promise.all(
      origins.map((origin) => owner.post(`/portal/apps/${busy.appId}/allowed-origins`, { _csrf: form.csrf, origin })),
    );
    assert.deepEqual(
      answers.map((answer) => answer.location),
      origins.map(() => `/portal/apps/${busy.appId}?done=origin-added#web-page-origins`),
    );
    assert.deepEqual([...(await originsOf(busy.appId))].sort(), [...origins].sort());
  });

  it("answers the portal's script with JSON: the origins now, or the mistake", async () => {
    const json = (origin: string) =>
      owner.send(path(), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ _csrf: csrf, origin }).toString(),
      });
    const added = await json('http://127.0.0.1:3000');
    assert.equal(added.status, 200, added.text);
    const origins = await originsOf();
    assert.equal(origins.at(-1), 'http://127.0.0.1:3000');
    assert.deepEqual(JSON.parse(added.text), {
      message: 'The origin is added: reload your page, and its calls get through.',
      allowedOrigins: origins,
    });
    const wrong = await json('localhost:3000');
    assert.equal(wrong.status, 400);
    assert.match(JSON.parse(wrong.text).message, /^Your page's origin \("localhost:3000"\) is not an origin/);
  });

  it('refuses what is not one origin with 400 and the form again, what was typed in it; nothing is stored', async () => {
    const before = await originsOf();
    for (const [typed, message] of [
      ['', /Type your page's origin, such as http:\/\/localhost:5173\./],
      ['not an origin', /^Your page's origin \("not an origin"\) is not an origin: write scheme:\/\/host/],
      ['http://localhost:5173/index.html', /is not an origin/],
      ['http://localhost:5173?x=1', /is not an origin/],
      ['ftp://files.example.com', /is not an origin/],
      [`https://${'a'.repeat(292)}`, /is not an origin/],
      [`https://${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.${'e'.repeat(60)}.com`, /is not an origin/],
      ['https://example.com, https://other.example.com', /is not an origin/],
      ['<script>alert(1)</script>', /is not an origin/],
    ] as const) {
      const answer = await owner.post(path(), { _csrf: csrf, origin: typed });
      assert.equal(answer.status, 400, `${typed}: ${answer.status}`);
      const shown = /<p class="alert" role="alert">([^<]*)<\/p>/.exec(answer.text)?.[1];
      assert.ok(shown !== undefined, `${typed}: no message`);
      assert.match(decodeHtml(shown), message, typed);
      assert.match(answer.text, /<details class="quickstart" id="quickstart-web" open>/);
      assert.ok(answer.text.includes(`aria-invalid="true"`), typed);
      // What was typed is in the field, escaped (the 300 characters at most that the field takes).
      const field = /<input type="text" id="page-origin"[^>]*value="([^"]*)"/.exec(answer.text)![1]!;
      assert.equal(decodeHtml(field), typed.slice(0, 301), typed);
      assert.ok(!answer.text.includes('<script>alert'), 'escaped');
      assert.deepEqual(await originsOf(), before, `${typed}: nothing stored`);
    }
  });

  it('refuses a 101st origin: the app may list 100', async () => {
    const full = await createApp(owner, 'Full');
    const hundred = Array.from({ length: 100 }, (_, index) => `https://app${index}.example.com`);
    await server.tessera.apps.configure(full.appId, { allowedOrigins: hundred }, OPERATOR);
    const page = await owner.page(`/portal/apps/${full.appId}`);
    const answer = await owner.post(`/portal/apps/${full.appId}/allowed-origins`, {
      _csrf: page.csrf,
      origin: 'https://one-more.example.com',
    });
    assert.equal(answer.status, 400);
    assert.match(answer.text, /The app allows 100 origins already, as many as it may: remove one in Settings first\./);
    assert.deepEqual(await originsOf(full.appId), hundred);
  });

  it('a collaborator adds one too; another developer gets 404; a form without its token, 403; signed out, the sign-in page', async () => {
    await createDeveloper(server, 'collaborator@example.com');
    await createDeveloper(server, 'other@example.com');
    await addCollaborator(server, app.appId, 'collaborator@example.com');
    const collaborator = await signInOverHttp(server, 'collaborator@example.com');
    const page = await collaborator.page(`/portal/apps/${app.appId}`);
    assert.match(page.text, /<form method="post" action="\/portal\/apps\/[0-9a-f]+\/allowed-origins"/);
    const added = await collaborator.post(path(), { _csrf: page.csrf, origin: 'https://collaborator.example.com' });
    assert.equal(added.status, 303);
    assert.ok((await originsOf()).includes('https://collaborator.example.com'));

    const before = await originsOf();
    const other = await signInOverHttp(server, 'other@example.com');
    const theirs = (await other.page('/portal/')).csrf;
    assert.equal((await other.post(path(), { _csrf: theirs, origin: 'https://other.example.com' })).status, 404);
    assert.equal((await owner.post(path(), { origin: 'https://other.example.com' })).status, 403);
    assert.equal((await owner.post(path(), { _csrf: theirs, origin: 'https://other.example.com' })).status, 403);
    const signedOut = await portalClient(server).post(path(), { _csrf: csrf, origin: 'https://other.example.com' });
    assert.equal(signedOut.status, 303);
    assert.equal(signedOut.location, '/portal/sign-in');
    assert.deepEqual(await originsOf(), before);
  });

  it('is posted to a new tab from the new-app page, which shows the ClientSecret once, so that the page stays', () => {
    assert.match(
      app.created,
      /<form method="post" action="\/portal\/apps\/[0-9a-f]+\/allowed-origins" class="add-origin" data-add-origin target="_blank">/,
    );
    assert.match(
      app.overview,
      /<form method="post" action="\/portal\/apps\/[0-9a-f]+\/allowed-origins" class="add-origin" data-add-origin>/,
    );
  });
});
