import type { Page } from 'playwright-core';

// The page of the browser tests: a web app that calls Tessera with fetch, and reports what the
// browser let it read of each answer.

/** What the page read of an answer; `refused` when the browser would not let it read anything (CORS). */
export interface PageRead {
  status?: number;
  wwwAuthenticate?: string | null;
  retryAfter?: string | null;
  /** The answer's `X-Request-Id`, as the page's script reads it (null when the browser hides it, or there is none). */
  requestId?: string | null;
  body?: any;
  refused?: string;
}

export const FETCH_PAGE = `<!doctype html>
<meta charset="utf-8">
<title>A web app on another origin</title>
<script>
  // What any web app reads of an answer: its status, three headers, its JSON body. When the browser
  // does not let the page read the answer (CORS), fetch rejects, and that is all the page learns.
  async function call(url, init) {
    try {
      const response = await fetch(url, init);
      return {
        status: response.status,
        wwwAuthenticate: response.headers.get('WWW-Authenticate'),
        retryAfter: response.headers.get('Retry-After'),
        requestId: response.headers.get('X-Request-Id'),
        body: await response.json().catch(() => null),
      };
    } catch (error) {
      return { refused: error.name + ': ' + error.message };
    }
  }
</script>
`;

/** `fetch(url, init)` run by the page, in its origin. */
export function pageFetch(
  page: Page,
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<PageRead> {
  return page.evaluate(([url, init]) => (globalThis as unknown as { call(url: string, init: object): Promise<PageRead> }).call(url, init), [
    url,
    init,
  ] as const);
}
