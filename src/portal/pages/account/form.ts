import { newPasswordOf } from '../common/new-password.js';

// The change-password form, read from what the browser sent: the current password, and the new one typed twice.

export function passwordChangeOf(body: URLSearchParams): { current: string; password: string; same: boolean } {
  return { current: body.get('current') ?? '', ...newPasswordOf(body) };
}
