import { linkToken } from '../common/link-token.js';
import { newPasswordOf } from '../common/new-password.js';

// The set-password form, read from what the browser sent: the link's token, and the new password typed twice.

export function setPasswordFormOf(body: URLSearchParams): { token: string; password: string; same: boolean } {
  return { token: linkToken(body.get('token') ?? undefined), ...newPasswordOf(body) };
}
