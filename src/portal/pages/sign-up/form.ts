import { newPasswordOf } from '../common/new-password.js';

// The sign-up form, read from what the browser sent: the email, the password typed twice, and the
// page to go to afterwards (`nextPage` checks it).

export function signUpFormOf(body: URLSearchParams): { email: string; password: string; same: boolean; next: string | undefined } {
  return { email: body.get('email') ?? '', ...newPasswordOf(body), next: body.get('next') ?? undefined };
}
