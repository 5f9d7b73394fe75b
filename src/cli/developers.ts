import type { DeveloperDescription } from '../developers/developer.js';
import type { IssuedLink } from '../developers/one-time-link.js';
import { OPERATOR } from '../request-context.js';
import type { Tessera } from '../tessera.js';
import { stringFlag, UsageError, type FlagSpec, type ParsedCommand } from './args.js';
import type { Lines, Output } from './output.js';

export const DEVELOPERS_FLAGS: FlagSpec = { email: true, 'password-stdin': false };

/** More than this on standard input is not a password. */
const MAX_STDIN_LENGTH = 4096;

/** `tessera developers <verb>`: the operator's management of developer accounts (the portal's users). */
export async function runDevelopersCommand(tessera: Tessera, command: ParsedCommand, out: Output): Promise<void> {
  const [verb, email, ...extra] = command.positionals;
  const emailFlag = stringFlag(command, 'email');
  const passwordStdin = command.flags['password-stdin'] === true;
  if ((emailFlag !== undefined || passwordStdin) && verb !== 'create')
    throw new UsageError('--email and --password-stdin are for tessera developers create');
  const needsEmail = () => {
    if (email === undefined || extra.length > 0) throw new UsageError(`usage: tessera developers ${verb} EMAIL [--json]`);
    return email;
  };
  switch (verb) {
    case 'create': {
      if (emailFlag === undefined || email !== undefined)
        throw new UsageError('usage: tessera developers create --email EMAIL [--password-stdin] [--json]');
      const password = passwordStdin ? await readStdin() : null;
      const created = await tessera.developers.create(emailFlag, password, OPERATOR);
      return out.result({ ...created.developer, link: created.link }, () => [
        `Created developer ${created.developer.email} (id ${created.developer.id}).`,
        ...(created.link === null
          ? ['It can sign in to the portal with the password given.']
          : describeLink(created.link, 'It has no password yet.')),
      ]);
    }
    case 'list': {
      if (email !== undefined) throw new UsageError('usage: tessera developers list [--json]');
      const developers = await tessera.developers.list();
      return out.result(developers, () =>
        developers.length === 0 ? 'No developers yet. Create one: tessera developers create --email EMAIL' : developers.map(oneLine),
      );
    }
    case 'disable': {
      const disabled = await tessera.developers.disable(needsEmail(), OPERATOR);
      return out.result({ ...disabled.developer, changed: disabled.changed, sessionsEnded: disabled.sessionsEnded }, () =>
        disabled.changed
          ? `Disabled developer ${disabled.developer.email}: it cannot sign in; ${disabled.sessionsEnded} session(s) ended, its password links no longer work. Its apps keep it as a member.`
          : `Developer ${disabled.developer.email} was disabled already.`,
      );
    }
    case 'reset-link': {
      const link = await tessera.developers.issueResetLink(needsEmail(), OPERATOR);
      return out.result(link, () => describeLink(link, `A new password for ${link.email}; its earlier password links no longer work.`));
    }
    default:
      throw new UsageError('usage: tessera developers create|list|disable|reset-link … [--json]');
  }
}

/** A one-time link as the operator passes it on: the whole URL with PUBLIC_URL, the path without. */
export function describeLink(link: IssuedLink, intro: string): Lines {
  const lines = [`${intro} Pass this one-time link on (it works once, until ${link.expiresAt}):`, `  ${link.url ?? link.path}`];
  if (link.url === null) lines.push('This is a path on the server\u2019s public address: set PUBLIC_URL to print the whole link.');
  return lines;
}

function oneLine(developer: DeveloperDescription): string {
  const state = [
    developer.disabledAt === null ? '' : `disabled ${developer.disabledAt}`,
    developer.hasPassword ? '' : 'no password yet',
  ].filter(Boolean);
  return `${developer.id}  ${developer.createdAt}  ${developer.email}${state.length > 0 ? `  (${state.join(', ')})` : ''}`;
}

/** Standard input to its end, without the one line break a shell's `echo` or a file adds. */
async function readStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin.setEncoding('utf8')) {
    text += chunk as string;
    if (text.length > MAX_STDIN_LENGTH)
      throw new UsageError(`--password-stdin: more than ${MAX_STDIN_LENGTH} characters on standard input`);
  }
  return text.replace(/\r?\n$/, '');
}
