import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { CredentialDescription } from 'tessera-tokens/internal/credentials/credential.js';
import { BUILT_IN_SCOPES } from 'tessera-tokens/internal/credentials/scopes.js';
import { OPERATOR } from '../../src/request-context.js';
import { basic, bearer, formBody, request, whoami, type AppEndpoint } from '../helpers/http.js';
import { createDeveloper, createSharedApp } from '../helpers/portal.js';
import { signInOverHttp, type PortalClient, type PortalResponse } from '../helpers/portal-http.js';
import { assertRan, runBash, runNode, snippetOf } from '../helpers/portal-quickstarts.js';
import { serverForSuite } from '../helpers/server.js';

// An app's Credentials page over plain HTTP, on both stores: a credential made through the form
// (scopes, expiry, addresses) gets a token with its scopes from the real token endpoint, its secret
// shown once; mistakes are shown in the form and store nothing; a collaborator may not give
// credentials:manage; rotating and revoking; another developer's 404 and the form token.

let owner: PortalClient;
let collaborator: PortalClient;
let other: PortalClient;
const developerIds: Record<string, string> = {};

const server = serverForSuite({}, async () => {
  for (const name of ['owner', 'collaborator', 'other']) developerIds[name] = (await createDeveloper(server, `${name}@example.com`)).id;
  owner = await signInOverHttp(server, 'owner@example.com');
  collaborator = await signInOverHttp(server, 'collaborator@example.com');
  other = await signInOverHttp(server, 'other@example.com');
});

const newApp = (name = 'Shop') => createSharedApp(server, name, 'owner@example.com', 'collaborator@example.com');

const listPath = (app: { appId: string }) => `/portal/apps/${app.appId}/credentials`;

/** A form's fields as a browser sends them: a name may repeat (the scopes' boxes). */
type Fields = [string, string][];

function postFields(client: PortalClient, path: string, fields: Fields): Promise<PortalResponse> {
  return client.send(path, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
}

/** The new-credential form, opened and sent as `client`: its fields besides the form token and once value. */
async function sendNewCredential(client: PortalClient, app: { appId: string }, fields: Fields): Promise<PortalResponse> {
  const { csrf, once } = await client.page(listPath(app));
  return postFields(client, listPath(app), [['_csrf', csrf], ['once', once!], ...fields]);
}

/** The ClientID and ClientSecret a page shows once. */
function keysOf(text: string): { clientId: string; clientSecret: string } {
  const clientId = /data-key="clientId">(tcl_[0-9a-f]{24})</.exec(text)?.[1];
  const clientSecret = /data-key="clientSecret">(tessera_[0-9A-Za-z]{49})</.exec(text)?.[1];
  assert.ok(clientId !== undefined && clientSecret !== undefined, `the page shows the keys: ${text.slice(0, 400)}`);
  return { clientId, clientSecret };
}

async function credentialsOf(app: { appId: string }): Promise<CredentialDescription[]> {
  return server.tessera.credentials.list(app.appId, OPERATOR);
}

/** A token request with the credential, as `curl -u ID:SECRET -d grant_type=client_credentials` sends it. */
function requestWith(app: AppEndpoint, keys: { clientId: string; clientSecret: string }) {
  return request(`${app.appUrl}/oauth2/token`, {
    method: 'POST',
    headers: { authorization: basic(keys.clientId, keys.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: formBody({ grant_type: 'client_credentials' }),
  });
}

const tokenRequest = requestWith;

async function tokenOf(app: AppEndpoint, keys: { clientId: string; clientSecret: string }): Promise<string> {
  const response = await requestWith(app, keys);
  assert.equal(response.status, 200, response.text);
  return response.body.access_token as string;
}

/** A credential made through the form by `client`: its keys. */
async function credentialThroughForm(client: PortalClient, app: { appId: string }, name: string, scopes: string[]) {
  const response = await sendNewCredential(client, app, [['name', name], ...scopes.map((scope): [string, string] => ['scope', scope])]);
  assert.equal(response.status, 201, response.text.slice(0, 500));
  return keysOf(response.text);
}

async function eventually(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 3_000;
  while (!(await condition())) {
    if (performance.now() > deadline) assert.fail(`not within 3 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The text of HTML without tags, as a person reads it. */
function unescaped(text: string): string {
  const entities: Record<string, string> = { '&quot;': '"', '&#39;': "'", '&lt;': '<', '&gt;': '>', '&amp;': '&' };
  return text.replace(/&(?:quot|#39|lt|gt|amp);/g, (entity) => entities[entity]!);
}

/** `2027-01-31T09:30`, as `<input type=datetime-local>` sends it: the page takes it as UTC. */
function localDateTime(instant: number): string {
  return new Date(instant).toISOString().slice(0, 16);
}

describe("an app's Credentials page", () => {
  let app: Awaited<ReturnType<typeof newApp>>;
  before(async () => {
    app = await newApp('Credentials');
  });

  it('makes a credential with scopes, an expiry and addresses; its secret is shown once; its token has its scopes', async () => {
    const empty = await owner.page(listPath(app));
    assert.match(empty.text, /No credentials yet/);
    assert.match(empty.text, /<a href="[^"]+\/credentials" aria-current="page">Credentials<\/a>/);
    for (const scope of BUILT_IN_SCOPES) {
      assert.match(empty.text, new RegExp(`name="scope" value="${scope}"(?! disabled)`), `the owner may give ${scope}`);
    }
    const expiry = localDateTime(Date.now() + 2 * 86_400_000);
    const created = await sendNewCredential(owner, app, [
      ['name', 'CI: read events'],
      ['scope', 'events:read'],
      ['scope', 'app:read'],
      ['ownScopes', ' reports:read  '],
      ['expiresAt', expiry],
      ['allowFrom', '127.0.0.0/8\r\n\r\n::1\r\n'],
    ]);
    assert.equal(created.status, 201, created.text.slice(0, 500));
    const keys = keysOf(created.text);
    // The token request the page gives, run as a person does: the command that sets the secret,
    // the secret pasted at its prompt, then the request, in the same shell.
    const tokenCommand = snippetOf(created.text, 'credential-token');
    assert.equal(
      tokenCommand,
      [
        `APP_URL=${server.baseUrl}/api/apps/${app.appId}`,
        "# an admin token with the credential's scopes that expires in 15 minutes",
        'EXPIRES_AT=$(( ($(date +%s) + 900) * 1000 ))',
        'curl -s "$APP_URL/oauth2/token" \\',
        '  -d grant_type=client_credentials \\',
        `  -d client_id=${keys.clientId} \\`,
        '  --data-urlencode client_secret="$TESSERA_CLIENT_SECRET" \\',
        '  -d expiresAt="$EXPIRES_AT"; echo',
      ].join('\n'),
    );

    const [stored] = await credentialsOf(app);
    assert.equal(stored?.clientId, keys.clientId);
    assert.equal(stored.name, 'CI: read events');
    assert.deepEqual(stored.scopes, ['app:read', 'events:read', 'reports:read']);
    assert.equal(stored.expiresAt, `${expiry}:00.000Z`);
    assert.deepEqual(stored.allowFrom, ['127.0.0.0/8', '::1/128']);
    assert.equal(stored.createdBy, 'developer');
    assert.equal(stored.createdByDeveloperId, developerIds.owner);

    const list = await owner.page(listPath(app));
    assert.ok(list.text.includes(keys.clientId), 'the list shows the ClientID');
    assert.ok(!list.text.includes(keys.clientSecret), 'the list never shows the secret');
    assert.doesNotMatch(list.text, /data-key="clientSecret"/);
    assert.match(list.text, /by owner@example\.com/);
    assert.match(list.text, /<dt>Last used<\/dt><dd>Never<\/dd>/);
    assert.match(list.text, /<code>127\.0\.0\.0\/8<\/code>/);
    assert.ok(list.text.includes(`<time datetime="${expiry}:00.000Z">`), 'the expiry');

    const ran = await runBash(`${snippetOf(created.text, 'set-secret')}\n${tokenCommand}`, {}, keys.clientSecret);
    assertRan(ran, 'the token request');
    // Standard output has the prompt ("ClientSecret: "), then the answer.
    assert.match(ran.stdout, /^ClientSecret: \n\{/);
    const token = JSON.parse(ran.stdout.slice(ran.stdout.indexOf('{'))) as { access_token: string; scope: string; expires_in: number };
    assert.equal(token.scope, 'app:read events:read reports:read');
    assert.ok(token.expires_in > 850 && token.expires_in <= 900, `expires_in ${token.expires_in}: asked for 15 minutes`);
    // The server code the page gives, run as it is with the secret in the environment.
    const job = await runNode(snippetOf(created.text, 'credential-node'), 'job.mjs', { TESSERA_CLIENT_SECRET: keys.clientSecret });
    assertRan(job, 'the server code');
    assert.match(job.stdout, new RegExp(`scope: 'app:read events:read reports:read'`));
    assert.match(job.stdout, new RegExp(`clientId: '${keys.clientId}'`));
    const me = (await whoami(app.appUrl, bearer(token.access_token))).body;
    assert.equal(me.scope, 'app:read events:read reports:read');
    assert.equal(me.clientId, keys.clientId);
    await eventually(async () => (await credentialsOf(app))[0]?.lastUsedAt !== null, 'the last use is recorded');
    assert.doesNotMatch((await owner.page(listPath(app))).text, /<dt>Last used<\/dt><dd>Never<\/dd>/);

    await server.tessera.events.flush();
    const { events } = await server.tessera.events.list(app.appId, { type: 'credential.created', limit: 10 });
    assert.equal(events[0]?.principal, 'developer');
    assert.equal(events[0]?.details.byDeveloperId, developerIds.owner);
  });

  it('shows a mistake in the form with what was typed (400), and stores nothing', async () => {
    const mistakes: { what: string; fields: Fields; message: RegExp; kept: string }[] = [
      { what: 'no scope', fields: [['name', 'No scope']], message: /Choose at least one scope/, kept: 'value="No scope"' },
      {
        what: 'an own scope in capitals',
        fields: [
          ['name', 'Capitals'],
          ['ownScopes', 'Reports:read'],
        ],
        message: /The list of scopes has "Reports:read", which is not a scope/,
        kept: 'value="Reports:read"',
      },
      {
        what: "a scope in a built-in scope's namespace",
        fields: [
          ['name', 'Namespace'],
          ['ownScopes', 'tokens:delete'],
        ],
        message: /has "tokens:delete", which is not one of Tessera's scopes/,
        kept: 'value="tokens:delete"',
      },
      {
        what: 'a CIDR with host bits',
        fields: [
          ['name', 'Host bits'],
          ['scope', 'events:read'],
          ['allowFrom', '10.0.0.1/8'],
        ],
        message: /The list of allowed addresses has "10\.0\.0\.1\/8", which is not an IPv4 or IPv6 CIDR/,
        kept: '>10.0.0.1/8</textarea>',
      },
      {
        what: 'an expiry in the past',
        fields: [
          ['name', 'Past'],
          ['scope', 'events:read'],
          ['expiresAt', '2020-01-01T00:00'],
        ],
        message: /The expiry is in the past/,
        kept: 'value="2020-01-01T00:00"',
      },
      {
        what: 'an expiry that is not a date',
        fields: [
          ['name', 'Not a date'],
          ['scope', 'events:read'],
          ['expiresAt', 'tomorrow'],
        ],
        message: /The expiry must be a date and a time in UTC/,
        kept: 'value="tomorrow"',
      },
      {
        what: 'a name with a control character',
        fields: [
          ['name', 'CI\u0007job'],
          ['scope', 'events:read'],
        ],
        message: /The name must not contain control characters/,
        kept: 'value="CI\u0007job"',
      },
      {
        what: 'no name',
        fields: [
          ['name', '  '],
          ['scope', 'events:read'],
        ],
        message: /The name must be 1 to 100 characters/,
        kept: '',
      },
    ];
    const fresh = await newApp('Mistakes');
    for (const { what, fields, message, kept } of mistakes) {
      const response = await sendNewCredential(owner, fresh, fields);
      assert.equal(response.status, 400, `${what}: ${response.status}`);
      const shown = /<p class="alert" role="alert" id="credential-error">([^<]*)<\/p>/.exec(response.text)?.[1];
      assert.match(unescaped(shown ?? ''), message, what);
      assert.ok(response.text.includes(kept), `${what}: the form keeps ${kept}`);
      assert.match(response.text, /aria-describedby="credential-error /, `${what}: the field is described by the message`);
      assert.doesNotMatch(response.text, /data-key="clientSecret"/);
      assert.match(response.text, /<input type="hidden" name="once" value="[^"]+">/, `${what}: the form can be sent again`);
      if (fields.some(([name, value]) => name === 'scope' && value === 'events:read')) {
        assert.match(response.text, /value="events:read" checked/, `${what}: the box stays ticked`);
      }
    }
    assert.deepEqual(await credentialsOf(fresh), []);

    // The form shown again is sent again, corrected.
    const again = await sendNewCredential(owner, fresh, [
      ['name', 'Corrected'],
      ['scope', 'events:read'],
    ]);
    assert.equal(again.status, 201);
    assert.equal((await credentialsOf(fresh)).length, 1);
  });

  it('is made once per form: the same form sent again, or twice at the same time, makes one credential (409)', async () => {
    const fresh = await newApp('Sent twice');
    const { csrf, once } = await owner.page(listPath(fresh));
    const fields: Fields = [
      ['_csrf', csrf],
      ['once', once!],
      ['name', 'Twice'],
      ['scope', 'events:read'],
    ];
    const together = await Promise.all([postFields(owner, listPath(fresh), fields), postFields(owner, listPath(fresh), fields)]);
    assert.deepEqual(together.map((answer) => answer.status).sort(), [201, 409]);
    const later = await postFields(owner, listPath(fresh), fields);
    assert.equal(later.status, 409);
    assert.doesNotMatch(later.text, /data-key="clientSecret"/);
    assert.equal((await credentialsOf(fresh)).length, 1);
  });

  it('lets a collaborator make credentials, but not give credentials:manage or webhooks:manage (the boxes are disabled; posted anyway, 403)', async () => {
    const fresh = await newApp('Collaborator');
    const page = await collaborator.page(listPath(fresh));
    assert.match(page.text, /name="scope" value="credentials:manage" disabled/);
    assert.match(page.text, /name="scope" value="webhooks:manage" disabled/);
    assert.match(page.text, /Only the app's owner may give it/);
    for (const scope of BUILT_IN_SCOPES.filter((one) => one !== 'credentials:manage' && one !== 'webhooks:manage')) {
      assert.match(page.text, new RegExp(`name="scope" value="${scope}"(?! disabled)`));
    }

    const refused = await sendNewCredential(collaborator, fresh, [
      ['name', 'Manager'],
      ['scope', 'credentials:manage'],
    ]);
    assert.equal(refused.status, 403);
    assert.match(
      refused.text,
      /<p class="alert" role="alert" id="credential-error">Only the app.s owner may give a credential credentials:manage/,
    );
    assert.ok(refused.text.includes('value="Manager"'));
    assert.deepEqual(await credentialsOf(fresh), []);

    const keys = await credentialThroughForm(collaborator, fresh, 'Reader', ['events:read']);
    const [stored] = await credentialsOf(fresh);
    assert.equal(stored?.createdByDeveloperId, developerIds.collaborator);
    assert.equal((await tokenRequest(fresh, keys)).body.scope, 'events:read');
    assert.match((await owner.page(listPath(fresh))).text, /by collaborator@example\.com/);

    // The owner's credential with credentials:manage: the collaborator may revoke it, not rotate it.
    const manager = await credentialThroughForm(owner, fresh, 'Manager', ['credentials:manage']);
    const list = await collaborator.page(listPath(fresh));
    assert.match(list.text, /Only the owner rotates it/);
    const rotatePage = await collaborator.page(`${listPath(fresh)}/${manager.clientId}/rotate`);
    assert.doesNotMatch(rotatePage.text, /<form method="post" action="[^"]+\/rotate"/);
    const rotate = await postFields(collaborator, `${listPath(fresh)}/${manager.clientId}/rotate`, [
      ['_csrf', list.csrf],
      ['once', list.once!],
      ['grace', 'none'],
    ]);
    assert.equal(rotate.status, 403);
    assert.doesNotMatch(rotate.text, /data-key="clientSecret"/);
    assert.equal((await tokenRequest(fresh, manager)).status, 200, 'its secret is the same');
  });

  it('rotates a secret with a grace period (one hour preselected), and revokes a credential and its tokens', async () => {
    const fresh = await newApp('Rotation');
    const keys = await credentialThroughForm(owner, fresh, 'Deployer', ['tokens:revoke', 'events:read']);
    // Every token the credential gets is stored until its revocation: counted here.
    let issued = 0;
    const tokenRequest = async (target: AppEndpoint, secret: { clientId: string; clientSecret: string }) => {
      const response = await requestWith(target, secret);
      if (response.status === 200) issued++;
      return response;
    };
    const token = await tokenOf(fresh, keys);
    const secondToken = await tokenOf(fresh, keys);
    issued += 2;

    const rotatePath = `${listPath(fresh)}/${keys.clientId}/rotate`;
    const form = await owner.page(rotatePath);
    assert.match(form.text, /id="grace-3600" name="grace" value="3600" checked/);
    const rotated = await postFields(owner, rotatePath, [
      ['_csrf', form.csrf],
      ['once', form.once!],
      ['grace', '3600'],
    ]);
    assert.equal(rotated.status, 200, rotated.text.slice(0, 500));
    const next = keysOf(rotated.text);
    assert.equal(next.clientId, keys.clientId);
    assert.notEqual(next.clientSecret, keys.clientSecret);
    assert.match(rotated.text, /The previous secret keeps working until <time/);
    assert.equal((await tokenRequest(fresh, keys)).status, 200, 'the previous secret keeps its hour');
    assert.equal((await tokenRequest(fresh, next)).status, 200);
    const list = await owner.page(listPath(fresh));
    assert.match(list.text, /<dt>Previous secret<\/dt><dd>Works until <time/);
    assert.ok(!list.text.includes(next.clientSecret));

    // A mistake in the rotation form rotates nothing.
    const again = await owner.page(rotatePath);
    const wrong = await postFields(owner, rotatePath, [
      ['_csrf', again.csrf],
      ['once', again.once!],
      ['grace', 'custom'],
      ['graceSeconds', '0'],
    ]);
    assert.equal(wrong.status, 400);
    assert.match(wrong.text, /role="alert">The grace period must be/);
    assert.equal((await tokenRequest(fresh, next)).status, 200);

    // Without a grace period the previous secret stops at once.
    const third = await owner.page(rotatePath);
    const atOnce = await postFields(owner, rotatePath, [
      ['_csrf', third.csrf],
      ['once', third.once!],
      ['grace', 'none'],
    ]);
    assert.equal(atOnce.status, 200);
    const last = keysOf(atOnce.text);
    assert.equal((await tokenRequest(fresh, next)).status, 401);
    assert.equal((await tokenRequest(fresh, last)).status, 200);

    const revokePath = `${listPath(fresh)}/${keys.clientId}/revoke`;
    const confirm = await owner.page(revokePath);
    assert.match(confirm.text, /Revoke Deployer\?/);
    const revoked = await postFields(owner, revokePath, [
      ['_csrf', confirm.csrf],
      ['once', confirm.once!],
    ]);
    assert.equal(revoked.status, 303);
    assert.equal(revoked.location, `${listPath(fresh)}?revoked=${keys.clientId}`);
    const after = await owner.page(revoked.location);
    assert.equal(issued, 6);
    assert.match(
      after.text,
      /<strong>Deployer<\/strong> is revoked: its secret no longer works, and the 6 admin tokens it got were revoked with it\./,
    );
    assert.ok(!after.text.includes(keys.clientId), 'the list no longer has it');
    assert.equal((await whoami(fresh.appUrl, bearer(token))).status, 401);
    assert.equal((await whoami(fresh.appUrl, bearer(secondToken))).status, 401);
    assert.equal((await tokenRequest(fresh, last)).status, 401);
    await server.tessera.events.flush();
    const { events } = await server.tessera.events.list(fresh.appId, { type: 'credential.revoked', limit: 10 });
    assert.equal(events[0]?.details.byDeveloperId, developerIds.owner);

    // The notice comes from the audit log: another ClientID in the address says nothing.
    const made = await owner.page(`${listPath(fresh)}?revoked=tcl_000000000000000000000000`);
    assert.doesNotMatch(made.text, /role="status"/);
    // A credential revoked already: 404, and the form sent again: 409.
    assert.equal((await owner.get(revokePath)).status, 404);
    const twice = await postFields(owner, revokePath, [
      ['_csrf', confirm.csrf],
      ['once', confirm.once!],
    ]);
    assert.equal(twice.status, 404);
  });

  it('answers another developer 404 for every page and form, and changes nothing', async () => {
    const fresh = await newApp('Not theirs');
    const keys = await credentialThroughForm(owner, fresh, 'Theirs', ['events:read']);
    const before = await credentialsOf(fresh);
    const base = listPath(fresh);
    for (const path of [base, `${base}/${keys.clientId}/rotate`, `${base}/${keys.clientId}/revoke`]) {
      const response = await other.send(path);
      assert.equal(response.status, 404, `GET ${path}`);
      assert.ok(!response.text.includes(keys.clientId) && !response.text.includes('Not theirs'), `GET ${path} shows nothing of the app`);
    }
    const { csrf } = await other.page('/portal/');
    for (const [path, fields] of [
      [
        base,
        [
          ['name', 'Intruder'],
          ['scope', 'events:read'],
        ],
      ],
      [`${base}/${keys.clientId}/rotate`, [['grace', 'none']]],
      [`${base}/${keys.clientId}/revoke`, []],
    ] as [string, Fields][]) {
      const response = await postFields(other, path, [['_csrf', csrf], ...fields]);
      assert.equal(response.status, 404, `POST ${path}: ${response.status}`);
      assert.ok(!response.text.includes(keys.clientId), `POST ${path} shows nothing of the app`);
    }
    assert.deepEqual(await credentialsOf(fresh), before);
    assert.equal((await tokenRequest(fresh, keys)).status, 200);
    // An unknown credential of one's own app is 404 too.
    assert.equal((await owner.send(`${base}/tcl_000000000000000000000000/rotate`)).status, 404);
    assert.equal((await owner.send(`${base}/not-a-client-id/revoke`)).status, 404);
  });

  it('needs the form token of the session: without it, or with another session’s, 403 and nothing changes', async () => {
    const fresh = await newApp('Form tokens');
    const keys = await credentialThroughForm(owner, fresh, 'Kept', ['events:read']);
    const before = await credentialsOf(fresh);
    const base = listPath(fresh);
    const { once } = await owner.page(base);
    const otherSessions = (await other.page('/portal/')).csrf;
    const collaborators = (await collaborator.page(base)).csrf;
    for (const [path, fields] of [
      [
        base,
        [
          ['once', once!],
          ['name', 'Forged'],
          ['scope', 'events:read'],
        ],
      ],
      [
        `${base}/${keys.clientId}/rotate`,
        [
          ['once', once!],
          ['grace', 'none'],
        ],
      ],
      [`${base}/${keys.clientId}/revoke`, [['once', once!]]],
    ] as [string, Fields][]) {
      for (const [what, token] of [
        ['no token', undefined],
        ["another developer's token", otherSessions],
        ["a collaborator's token", collaborators],
        ['a made-up token', 'x'.repeat(40)],
      ] as const) {
        const response = await postFields(owner, path, token === undefined ? fields : [['_csrf', token], ...fields]);
        assert.equal(response.status, 403, `${path} with ${what}: ${response.status}`);
        assert.doesNotMatch(response.text, /data-key="clientSecret"/);
      }
    }
    assert.deepEqual(await credentialsOf(fresh), before);
    assert.equal((await tokenRequest(fresh, keys)).status, 200);
  });
});
