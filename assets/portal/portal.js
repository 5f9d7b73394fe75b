// The portal's only script, and only an enhancement: every page and form works without it.
// A "Copy" button beside each key and each block of commands.
for (const target of document.querySelectorAll('[data-key], [data-copyable]')) {
  if (!navigator.clipboard) break;
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'copy secondary';
  const what = target.closest('.key')?.querySelector('dt')?.textContent ?? 'the commands';
  button.textContent = 'Copy';
  button.setAttribute('aria-label', `Copy ${what}`);
  button.addEventListener('click', async () => {
    await navigator.clipboard.writeText(target.textContent ?? '');
    button.textContent = 'Copied';
    setTimeout(() => (button.textContent = 'Copy'), 2000);
  });
  target.after(button);
}

// A form that may be sent once (a new app, a rotation: src/portal/once.ts) is sent once per page,
// however often its button is pressed: a second send would be refused (409) and its answer, the
// secret, lost with the first one's. Without this script the server still refuses the second.
for (const once of document.querySelectorAll('form input[name="once"]')) {
  let sent = false;
  once.form.addEventListener('submit', (event) => {
    if (sent) event.preventDefault();
    sent = true;
  });
}

// Events page (src/portal/pages/events.ts): new events appear at the top without a reload, and the
// charts follow. Every few seconds, while the tab is seen, the page asks for the events newer than
// the newest it shows; the page works without this (the filter and "Older events" are links and forms).
const eventList = document.querySelector('ol.events[data-live]');
if (eventList) {
  const status = document.querySelector('[data-live-status]');
  const charts = document.querySelector('[data-charts]');
  let newest = eventList.dataset.newest ?? '0';
  let lastCharts = '';
  const poll = async () => {
    if (document.hidden) return true;
    const url = new URL(eventList.dataset.live, location.href);
    url.searchParams.set('after', newest);
    const response = await fetch(url, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
    if (!response.ok || !(response.headers.get('content-type') ?? '').startsWith('application/json')) {
      // Polling does not keep the session alive: once it has ended (sent to the sign-in page), say so and stop.
      if (status && new URL(response.url).pathname === '/portal/sign-in')
        status.textContent = 'Live updates stopped: your session has ended. Reload the page to sign in again.';
      return false;
    }
    const update = await response.json();
    if (update.count > 0) {
      eventList.insertAdjacentHTML('afterbegin', update.items);
      for (const item of eventList.querySelectorAll('li.event:not([data-seen])')) item.classList.add('new');
      newest = String(update.newest);
      document.querySelector('[data-no-events]')?.remove();
      if (status) {
        // Emptied first, so that the same words twice in a row are announced again.
        status.textContent = '';
        const words = `${update.count} new event${update.count === 1 ? '' : 's'}`;
        setTimeout(() => (status.textContent = words), 100);
      }
    }
    for (const item of eventList.querySelectorAll('li.event')) item.dataset.seen = '';
    if (charts && update.charts !== lastCharts) {
      // Keep the tables that were opened open.
      const open = [...charts.querySelectorAll('figure')]
        .filter((figure) => figure.querySelector('details')?.open)
        .map((figure) => figure.id);
      charts.innerHTML = update.charts;
      for (const id of open) document.getElementById(id)?.querySelector('details')?.setAttribute('open', '');
      lastCharts = update.charts;
    }
    return true;
  };
  for (const item of eventList.querySelectorAll('li.event')) item.dataset.seen = '';
  const schedule = () => setTimeout(async () => ((await poll().catch(() => true)) ? schedule() : undefined), 5000);
  schedule();
}
