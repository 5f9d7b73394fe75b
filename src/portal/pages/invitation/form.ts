import { linkToken } from '../common/link-token.js';

// The accept-invitation form, read from what the browser sent: the link's token.

export function invitationTokenOf(body: URLSearchParams): string {
  return linkToken(body.get('token') ?? undefined);
}
