// The sign-in form, read from what the browser sent: the email, the password, and the page to go
// back to (`nextPage` checks it).

export interface SignInForm {
  email: string;
  password: string;
  next: string | undefined;
}

export function signInFormOf(body: URLSearchParams): SignInForm {
  return { email: body.get('email') ?? '', password: body.get('password') ?? '', next: body.get('next') ?? undefined };
}
