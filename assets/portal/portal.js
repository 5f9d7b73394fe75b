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
