// The people page's forms, read from what the browser sent, and its addresses' parameters.

/** The email typed in the invite form; `AppMembers.invite` checks it. */
export function invitedEmailOf(body: URLSearchParams): string {
  return body.get('email') ?? '';
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether a member's address names a developer id at all (anything else is no member: 404). */
export function isDeveloperId(developerId: string): boolean {
  return UUID.test(developerId);
}
