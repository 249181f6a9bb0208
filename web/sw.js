// The service worker: keeps the app shell (the page and its hashed files, listed by the
// daemon when it serves this file) so the app opens without the daemon, where it says
// "daemon unreachable" and reconnects by itself. The API and the event stream are never
// cached: they always go to the network.
//
// It also shows the daemon's Web Push notifications with the page closed: a question, an
// approval (Approve / Deny), a takeover, a task's end. An action is answered here, through
// the API with the page's session cookie (same origin: the browser sends the Origin the
// daemon requires), and its outcome is shown as a notification of its own.

const SHELL = "{{shell}}";
// One cache per shell: any file's new hash gives a new name, and activation drops the rest.
const CACHE = `lazyboy-${[...SHELL.join()].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7).toString(16)}`;

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

self.addEventListener('fetch', (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== 'GET' || url.origin !== location.origin) return;
  if (url.pathname.startsWith('/assets/')) {
    // Hashed: the cached copy is the right one.
    event.respondWith(caches.match(event.request).then((hit) => hit ?? fetch(event.request)));
  } else if (url.pathname === '/' && !url.search) {
    // The page: fresh when the daemon answers, the cached shell when it does not.
    event.respondWith(fetch(event.request).catch(() => caches.match('/')));
  }
});

const ICON = '/assets/icons/icon-192.png';

self.addEventListener('push', (event) => {
  let payload;
  try { payload = event.data.json(); } catch { payload = { title: 'LazyBoy', body: event.data?.text() ?? '' }; }
  // Every push shows a notification (userVisibleOnly); one task's replace each other.
  const options = {
    body: payload.body ?? '',
    tag: payload.task ?? payload.id ?? 'lazyboy',
    renotify: true,
    requireInteraction: ['question', 'approval', 'takeover'].includes(payload.kind),
    icon: ICON,
    data: payload,
    actions: (payload.actions ?? []).slice(0, 2).map((a) => ({ action: a.action, title: a.title })),
  };
  event.waitUntil(self.registration.showNotification(payload.title ?? 'LazyBoy', options));
});

/** Answers a notification's action through the API; what happened, in words. */
async function act(payload, action) {
  const task = encodeURIComponent(payload.task ?? '');
  let path; let body = {};
  if (action === 'approve') path = `/api/tasks/${task}/approve`;
  else if (action === 'deny') { path = `/api/tasks/${task}/deny`; body = { reason: 'denied from a notification' }; }
  else if (action.startsWith('option:')) { path = `/api/tasks/${task}/answer`; body = { option: Number(action.slice(7)) }; }
  else return null;
  const response = await fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (response.ok) {
    return action === 'approve' ? 'Approved' : action === 'deny' ? 'Denied'
      : `Answered: ${payload.actions?.find((a) => a.action === action)?.title ?? action}`;
  }
  const detail = await response.json().catch(() => null);
  return `Not done: ${detail?.error?.message ?? response.statusText}`;
}

self.addEventListener('notificationclick', (event) => {
  const payload = event.notification.data ?? {};
  event.notification.close();
  if (event.action) {
    const done = act(payload, event.action).then((outcome) => outcome && self.registration.showNotification(
      `${payload.agent ?? 'LazyBoy'}: ${outcome}`,
      { body: payload.title ?? '', tag: `${payload.task ?? payload.id}-outcome`, icon: ICON, data: { url: payload.url } },
    ));
    event.waitUntil(done);
    return;
  }
  // Tapped: open the task (focus a window already on the dashboard).
  const url = payload.url ?? '/';
  event.waitUntil(self.clients.matchAll({ type: 'window' }).then((windows) => {
    const open = windows.find((w) => new URL(w.url).origin === location.origin);
    if (open) return open.navigate(url).then((w) => (w ?? open).focus()).catch(() => open.focus());
    return self.clients.openWindow(url);
  }));
});
