import { html, type Html } from '../../html.js';
import { page, type PageFrame } from '../../layout.js';

const TITLES: Record<number, string> = {
  400: 'That did not work',
  403: 'Not allowed',
  404: 'Not found',
  405: 'Not allowed',
  413: 'Too large',
  415: 'Not a form',
  429: 'Too many attempts',
  503: 'Unavailable for a moment',
};

/** The page of an error: what went wrong in words, and a way back. */
export function errorPage(frame: PageFrame, status: number, message: string | undefined): Html {
  const title = TITLES[status] ?? (status >= 500 ? 'Something went wrong' : 'That did not work');
  const explanation =
    status === 404
      ? 'There is no such page, or no app of yours at this address.'
      : status === 403 && message === undefined
        ? 'The form had expired or did not come from this page. Go back, reload the page and try again.'
        : (message ?? 'The portal could not do this. Try again in a moment.');
  return page({
    title,
    ...frame,
    body: html`<h1>${title}</h1>
<p>${explanation}</p>
<p><a href="/portal/">Back to your apps</a></p>`,
  });
}
