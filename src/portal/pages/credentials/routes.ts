import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { CreatedCredential, CredentialPermissions } from '../../../apps/credential-service.js';
import { CREDENTIAL_CLIENT_ID_PATTERN, type CredentialDescription } from 'tessera-tokens/internal/credentials/credential.js';
import type { NewCredentialFields } from '../../../credentials/input.js';
import { TesseraError } from 'tessera-tokens/internal/errors.js';
import type { RequestContext } from '../../../request-context.js';
import { serviceBaseUrl } from '../../base-url.js';
import { formOf, type AppParams, type PortalContext } from '../../context.js';
import { issueSingleUseFormValue, useSingleUseFormValue } from '../../single-use-forms.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, signedIn } from '../../respond.js';
import { graceSecondsOf } from '../common/rotation.js';
import { mistakeIn } from '../common/mistakes.js';
import { credentialFields, credentialFormOf, EMPTY_FORM, mistakeOf, rotationFormOf } from './form.js';
import { createdPage, credentialsPage, revocationPage, rotatedPage, rotationPage, type ListState, type RevokedNotice } from './views.js';

type CredentialParams = { Params: { appId: string; clientId: string } };

/** The form's body at its longest, form-encoded (`:` and `/` as `%3A`, `%2F`): above the server's limit for other bodies. */
const CREDENTIAL_BODY_LIMIT_BYTES = 32 * 1024;

/**
 * An app's credentials (docs/portal.md, "Credentials"): further ClientIDs whose admin tokens may do
 * only what their scopes say. The owner and the collaborators list, create, rotate and revoke them
 * (`manage_credentials`); what each may give or rotate is `CredentialService`'s to say
 * (`CredentialService.permissions`), asked once per request with the developer's role. A new
 * credential's secret, and a rotated one, is shown once, on the answer to the form.
 */
export const credentialsPages: FastifyPluginAsync<PortalContext> = async (
  app,
  { members, apps, credentials, events, clock, publicUrl, secureCookies },
) => {
  const singleUseForms = { secure: secureCookies };
  app.addHook('preHandler', requireSession);

  /** What the developer may do with the app's credentials, if it may manage them (404 for no member, as for no app). */
  const permissionsOf = (request: FastifyRequest, appId: string) => credentials.permissions(appId, asDeveloper(request));

  /** What the developer may do on the app, for its tabs: the role read for the request already. */
  const accessOf = (request: FastifyRequest, appId: string) => members.permissions(appId, 'view_app', asDeveloper(request));

  /** The credential, or 404. */
  async function credentialOf(appId: string, clientId: string, context: RequestContext): Promise<CredentialDescription> {
    const found = CREDENTIAL_CLIENT_ID_PATTERN.test(clientId)
      ? (await credentials.list(appId, context)).find((credential) => credential.clientId === clientId)
      : undefined;
    if (found === undefined) throw new TesseraError('NOT_FOUND', 'This app has no credential with this ClientID.');
    return found;
  }

  /** The list and the new-credential form, in `state`. */
  async function listPage(
    request: FastifyRequest,
    reply: FastifyReply,
    appId: string,
    permissions: CredentialPermissions,
    state: ListState,
  ) {
    const context = asDeveloper(request);
    const [described, listed, people, access] = await Promise.all([
      apps.show(appId, context),
      credentials.list(appId, context),
      members.membersOf(appId, context),
      accessOf(request, appId),
    ]);
    const emails = new Map(people.map((person) => [person.developerId, person.email]));
    const input = {
      ...state,
      app: described,
      permissions,
      access,
      listed,
      emails,
      now: clock.now(),
      once: issueSingleUseFormValue(reply, singleUseForms),
    };
    return credentialsPage(signedIn(request, reply), input);
  }

  app.get<AppParams & { Querystring: { revoked?: unknown } }>('/apps/:appId/credentials', async (request, reply) => {
    const { appId } = request.params;
    const permissions = await permissionsOf(request, appId);
    const revoked = await revokedNotice(appId, request.query.revoked, asDeveloper(request));
    return sendPage(reply, await listPage(request, reply, appId, permissions, { form: EMPTY_FORM, revoked }));
  });

  const createRoute = { onRequest: requireSession, bodyLimit: CREDENTIAL_BODY_LIMIT_BYTES, preValidation: csrfCheck(app) };
  app.post<AppParams>('/apps/:appId/credentials', createRoute, async (request, reply) => {
    const { appId } = request.params;
    const permissions = await permissionsOf(request, appId);
    const sent = useSingleUseFormValue(request, reply, singleUseForms);
    const form = credentialFormOf(formOf(request));
    const again = async (error: unknown) => {
      const [status, mistake] = mistakeOf(error);
      return sendPage(reply, await listPage(request, reply, appId, permissions, { form, mistake }), status);
    };
    let fields: NewCredentialFields;
    try {
      fields = credentialFields(form);
    } catch (error) {
      return again(error);
    }
    let created: CreatedCredential;
    try {
      created = await credentials.create(appId, fields, asDeveloper(request), sent);
    } catch (error) {
      return again(error);
    }
    const described = await apps.show(appId, asDeveloper(request));
    const base = serviceBaseUrl(request, publicUrl);
    const access = await accessOf(request, appId);
    return sendPage(reply, createdPage(signedIn(request, reply), access, described, created, base, clock.now()), 201);
  });

  app.get<CredentialParams & { Querystring: { ended?: unknown } }>('/apps/:appId/credentials/:clientId/rotate', async (request, reply) => {
    const { appId, clientId } = request.params;
    const permissions = await permissionsOf(request, appId);
    const context = asDeveloper(request);
    const credential = await credentialOf(appId, clientId, context);
    const described = await apps.show(appId, context);
    const input = {
      app: described,
      credential,
      permissions,
      access: await accessOf(request, appId),
      now: clock.now(),
      grace: '3600',
      graceSeconds: '',
      ended: request.query.ended,
      once: issueSingleUseFormValue(reply, singleUseForms),
    };
    return sendPage(reply, rotationPage(signedIn(request, reply), input));
  });

  app.post<CredentialParams>(
    '/apps/:appId/credentials/:clientId/end-previous-secret',
    { preValidation: csrfCheck(app) },
    async (request, reply) => {
      const { appId, clientId } = request.params;
      await permissionsOf(request, appId);
      const { endedPreviousSecretValidUntil } = await credentials.endPreviousSecret(appId, clientId, asDeveloper(request));
      const ended = endedPreviousSecretValidUntil === null ? 'none' : 'yes';
      return seeOther(reply, `/portal/apps/${appId}/credentials/${clientId}/rotate?ended=${ended}`);
    },
  );

  app.post<CredentialParams>('/apps/:appId/credentials/:clientId/rotate', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId, clientId } = request.params;
    const permissions = await permissionsOf(request, appId);
    const context = asDeveloper(request);
    const credential = await credentialOf(appId, clientId, context);
    const sent = useSingleUseFormValue(request, reply, singleUseForms);
    const described = await apps.show(appId, context);
    const access = await accessOf(request, appId);
    const form = rotationFormOf(formOf(request));
    let options: { graceSeconds?: number };
    try {
      const seconds = graceSecondsOf(form, 'secret');
      options = seconds === undefined ? {} : { graceSeconds: seconds };
    } catch (error) {
      const message = mistakeIn(error);
      const input = {
        app: described,
        credential,
        permissions,
        access,
        now: clock.now(),
        ...form,
        once: issueSingleUseFormValue(reply, singleUseForms),
      };
      return sendPage(reply, rotationPage(signedIn(request, reply), input, message), 400);
    }
    const rotated = await credentials.rotate(appId, clientId, { ...options, once: sent }, context);
    return sendPage(reply, rotatedPage(signedIn(request, reply), access, described, credential, rotated));
  });

  // Without JavaScript there is no confirm(): revoking asks first, on a page of its own.
  app.get<CredentialParams>('/apps/:appId/credentials/:clientId/revoke', async (request, reply) => {
    const { appId, clientId } = request.params;
    await permissionsOf(request, appId);
    const context = asDeveloper(request);
    const credential = await credentialOf(appId, clientId, context);
    const described = await apps.show(appId, context);
    const access = await accessOf(request, appId);
    const sent = issueSingleUseFormValue(reply, singleUseForms);
    return sendPage(reply, revocationPage(signedIn(request, reply), access, sent, described, credential));
  });

  app.post<CredentialParams>('/apps/:appId/credentials/:clientId/revoke', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId, clientId } = request.params;
    await permissionsOf(request, appId);
    const context = asDeveloper(request);
    await credentialOf(appId, clientId, context);
    await credentials.revoke(appId, clientId, context, useSingleUseFormValue(request, reply, singleUseForms));
    return seeOther(reply, `/portal/apps/${appId}/credentials?revoked=${clientId}`);
  });

  /**
   * What the list says after a revocation, from the app's audit log (`credential.revoked`, which
   * the revocation wrote with it): its name and how many tokens went with it. The address only
   * names the credential, so nothing it says comes from the address itself.
   */
  async function revokedNotice(appId: string, clientId: unknown, context: RequestContext): Promise<RevokedNotice | undefined> {
    if (typeof clientId !== 'string' || !CREDENTIAL_CLIENT_ID_PATTERN.test(clientId)) return undefined;
    const { events: revocations } = await events.list(appId, { type: 'credential.revoked', limit: 60 }, context);
    const event = revocations.find((candidate) => candidate.details.clientId === clientId);
    if (event === undefined) return undefined;
    const { name, tokensRevoked } = event.details;
    const madeNames = revocations
      .filter((candidate) => candidate.details.revokedWith === clientId && candidate.id !== event.id)
      .map((candidate) => (typeof candidate.details.name === 'string' ? candidate.details.name : String(candidate.details.clientId)));
    return {
      name: typeof name === 'string' ? name : clientId,
      tokensRevoked: typeof tokensRevoked === 'number' ? tokensRevoked : 0,
      madeNames,
    };
  }
};
