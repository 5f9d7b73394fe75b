// The new-app form, read from what the browser sent: its name, which `OwnedApps.create` checks.

export function appNameOf(body: URLSearchParams): string {
  return body.get('name') ?? '';
}
