// The portal's only script, and only an enhancement: every page and form works without it.
// A "Copy" button beside each key and each block of commands or code (named by its data-copyable).
for (const target of document.querySelectorAll('[data-key], [data-copyable]')) {
  if (!navigator.clipboard) break;
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'copy secondary';
  const what = target.closest('.key')?.querySelector('dt')?.textContent || target.dataset.copyable || 'the commands';
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

// The quickstarts' "Your page's origin" (src/portal/pages/quickstarts.ts): sent without leaving the
// page, so that the new-app page keeps its ClientSecret in sight; the allowed origins and the answer
// are shown in place. Without this script the form is posted as any other (from the new-app page,
// into a new tab).
for (const form of document.querySelectorAll('form[data-add-origin]')) {
  const container = form.closest('.origins');
  const field = form.querySelector('input[name="origin"]');
  const status = container.querySelector('[data-origin-status]');
  const alertBox = container.querySelector('[data-origin-alert]');
  const list = container.querySelector('[data-allowed-origins]');
  const show = (box, className, text, role) => {
    const message = document.createElement('p');
    message.className = className;
    if (role) message.setAttribute('role', role);
    message.textContent = text;
    box.replaceChildren(message);
  };
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    status.replaceChildren();
    alertBox.replaceChildren();
    let answer;
    try {
      const response = await fetch(form.action, {
        method: 'POST',
        headers: { accept: 'application/json' },
        body: new URLSearchParams(new FormData(form)),
        credentials: 'same-origin',
      });
      if (!(response.headers.get('content-type') ?? '').startsWith('application/json')) throw new Error(String(response.status));
      answer = { ok: response.ok, ...(await response.json()) };
    } catch {
      answer = {
        ok: false,
        message: 'Not saved: the portal did not answer as expected. Reload the page (your session may have ended) and try again.',
      };
    }
    if (answer.ok) {
      field.value = '';
      field.removeAttribute('aria-invalid');
      show(status, 'notice success', answer.message);
    } else {
      field.setAttribute('aria-invalid', 'true');
      show(alertBox, 'alert', answer.message, 'alert');
      field.focus();
    }
    if (Array.isArray(answer.allowedOrigins)) {
      list.replaceChildren();
      answer.allowedOrigins.forEach((origin, index) => {
        if (index > 0) list.append(', ');
        const code = document.createElement('code');
        code.textContent = origin;
        list.append(code);
      });
      if (answer.allowedOrigins.length === 0) list.textContent = 'none';
      // The overview's settings list them too.
      const setting = document.querySelector('[data-allowed-origins-setting]');
      if (setting) {
        const items = document.createElement('ul');
        items.className = 'plain';
        for (const origin of answer.allowedOrigins) {
          const item = document.createElement('li');
          const code = document.createElement('code');
          code.textContent = origin;
          item.append(code);
          items.append(item);
        }
        setting.replaceChildren(answer.allowedOrigins.length === 0 ? 'none' : items);
      }
    }
  });
}

// Events page (src/portal/pages/events.ts): typing a time into From or To chooses the custom range
// (without this script, the range chosen is the one sent); and a form sent leaves out what is empty,
// and a custom range's times when another range is chosen, so that its address stays short.
const eventsView = document.querySelector('form[data-events-view]');
if (eventsView) {
  const custom = eventsView.querySelector('input[name="range"][value="custom"]');
  for (const input of eventsView.querySelectorAll('input[type="datetime-local"]'))
    input.addEventListener('input', () => custom && (custom.checked = true));
  eventsView.addEventListener('formdata', (event) => {
    const isCustom = event.formData.get('range') === 'custom';
    for (const [name, value] of [...event.formData.entries()]) {
      if (value === '' || (!isCustom && (name === 'from' || name === 'to'))) event.formData.delete(name);
    }
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
