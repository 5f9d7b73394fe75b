import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { isTesseraError } from 'tessera-tokens/internal/errors.js';
import { parsePlayIntegritySettings } from '../../../attestation/android.js';
import { parseAppAttestSettings } from '../../../attestation/apple.js';
import { attestationSummary } from '../../../attestation/monitor.js';
import type { RequestContext } from '../../../request-context.js';
import { eventCountQuery } from '../../../events/counts.js';
import { formOf, type AppParams, type PortalContext } from '../../context.js';
import { issueSingleUseFormValue, useSingleUseFormValue } from '../../single-use-forms.js';
import { asDeveloper, csrfCheck, requireSession, seeOther, sendPage, signedIn } from '../../respond.js';
import { refusalIn } from '../common/mistakes.js';
import { attestationChangesOf, attestationFormOf, debugTokenNameOf } from './form.js';
import { attestationPage, doneMessage, type AttestationPageInput, type CountsPer } from './views.js';

type PageQuery = { Querystring: { per?: unknown; done?: unknown } };

const SPAN_MS: Record<CountsPer, number> = { hour: 24 * 3_600_000, day: 14 * 86_400_000 };

/**
 * An app's attestation (docs/portal.md, "Attestation"): what its anonymous token requests' attestations
 * were, per hour or day, and the share that enforcement refuses or would refuse, before a person
 * turns it on; the mode, Basic anonymous access and the proof of work's settings (owner and
 * collaborators); and its debug tokens, each shown once when made.
 */
export const attestationPages: FastifyPluginAsync<PortalContext> = async (
  app,
  { members, apps, events, debugTokens, platforms, clock, secureCookies },
) => {
  const singleUseForms = { secure: secureCookies };
  app.addHook('preHandler', requireSession);

  async function renderPage(
    request: FastifyRequest,
    reply: FastifyReply,
    appId: string,
    state: Pick<AttestationPageInput, 'form' | 'mistake' | 'done' | 'created' | 'platformForms'> & { per?: CountsPer },
  ) {
    const context = asDeveloper(request);
    const permissions = await members.permissions(appId, 'view_events', context);
    const per = state.per ?? 'day';
    const now = clock.now();
    // A platform not set up is the service's 404; any other error is the page's.
    const setUp = async <T>(shown: Promise<T>): Promise<T | null> => {
      try {
        return await shown;
      } catch (error) {
        if (isTesseraError(error) && error.code === 'NOT_FOUND') return null;
        throw error;
      }
    };
    const [described, counts, listed, android, apple] = await Promise.all([
      apps.show(appId, context),
      events.counts(appId, eventCountQuery({ per, since: now - SPAN_MS[per] + 1, until: now + 1 }, now), context),
      debugTokens.list(appId, context),
      setUp(platforms.playIntegrity.show(appId, context)),
      setUp(platforms.appAttest.show(appId, context)),
    ]);
    return attestationPage(signedIn(request, reply), {
      platformForms: {
        teamId: apple?.teamId ?? '',
        bundleId: apple?.bundleId ?? '',
        environment: apple?.environment ?? 'production',
        packageName: android?.packageName ?? '',
      },
      ...state,
      app: described,
      permissions,
      summary: attestationSummary(counts),
      per,
      debugTokens: listed,
      platforms: { android: android && android.packageName, apple: apple && `${apple.teamId}.${apple.bundleId} (${apple.environment})` },
      once: issueSingleUseFormValue(reply, singleUseForms),
    });
  }

  app.get<AppParams & PageQuery>('/apps/:appId/attestation', async (request, reply) => {
    const per = request.query.per === 'hour' ? 'hour' : 'day';
    return sendPage(reply, await renderPage(request, reply, request.params.appId, { per, done: doneMessage(request.query.done) }));
  });

  app.post<AppParams>('/apps/:appId/attestation', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    await members.permissions(appId, 'change_configuration', context);
    const form = attestationFormOf(formOf(request));
    try {
      await apps.configure(appId, attestationChangesOf(form), context);
    } catch (error) {
      const mistake = { section: 'settings' as const, message: refusalIn(error, ['invalid_request', 'CONFLICT']).message };
      return sendPage(reply, await renderPage(request, reply, appId, { form, mistake }), 400);
    }
    return seeOther(reply, `/portal/apps/${appId}/attestation?done=saved`);
  });

  /** A platform's settings from its form: saved and redirected, or the page again with the mistake and what was typed (never a key). */
  const platformRoute = (
    section: 'apple' | 'android',
    save: (body: URLSearchParams, appId: string, context: RequestContext) => Promise<unknown>,
  ) =>
    app.post<AppParams>(`/apps/:appId/attestation/${section}`, { preValidation: csrfCheck(app) }, async (request, reply) => {
      const { appId } = request.params;
      const context = asDeveloper(request);
      await members.permissions(appId, 'change_configuration', context);
      const body = formOf(request);
      try {
        await save(body, appId, context);
      } catch (error) {
        const mistake = { section, message: refusalIn(error, ['invalid_request']).message };
        const field = (name: string) => (body.get(name) ?? '').slice(0, 255).trim();
        const platformForms = {
          teamId: field('teamId'),
          bundleId: field('bundleId'),
          environment: field('environment'),
          packageName: field('packageName'),
        };
        return sendPage(reply, await renderPage(request, reply, appId, { mistake, platformForms }), 400);
      }
      return seeOther(reply, `/portal/apps/${appId}/attestation?done=${section}-saved`);
    });
  platformRoute('apple', (body, appId, context) =>
    platforms.appAttest.set(
      appId,
      parseAppAttestSettings({
        teamId: body.get('teamId')?.trim(),
        bundleId: body.get('bundleId')?.trim(),
        environment: body.get('environment') ?? 'production',
      }),
      context,
    ),
  );
  platformRoute('android', (body, appId, context) =>
    platforms.playIntegrity.set(
      appId,
      parsePlayIntegritySettings({
        packageName: body.get('packageName')?.trim(),
        decryptionKey: body.get('decryptionKey')?.replace(/\s/g, ''),
        verificationKey: body.get('verificationKey')?.replace(/\s/g, ''),
      }),
      context,
    ),
  );

  app.post<AppParams>('/apps/:appId/attestation/debug-tokens', { preValidation: csrfCheck(app) }, async (request, reply) => {
    const { appId } = request.params;
    const context = asDeveloper(request);
    await members.permissions(appId, 'change_configuration', context);
    const sent = useSingleUseFormValue(request, reply, singleUseForms);
    try {
      const created = await debugTokens.create(appId, debugTokenNameOf(formOf(request)), context, sent);
      return sendPage(reply, await renderPage(request, reply, appId, { created }), 201);
    } catch (error) {
      const mistake = { section: 'debug-tokens' as const, message: refusalIn(error, ['invalid_request', 'CONFLICT']).message };
      return sendPage(reply, await renderPage(request, reply, appId, { mistake }), 400);
    }
  });

  app.post<AppParams & { Params: { debugTokenId: string } }>(
    '/apps/:appId/attestation/debug-tokens/:debugTokenId/revoke',
    { preValidation: csrfCheck(app) },
    async (request, reply) => {
      const { appId, debugTokenId } = request.params;
      await debugTokens.revoke(appId, debugTokenId, asDeveloper(request));
      return seeOther(reply, `/portal/apps/${appId}/attestation?done=revoked`);
    },
  );
};
