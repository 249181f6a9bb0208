// The service worker: keeps the app shell (the page and its hashed files, listed by the
// daemon when it serves this file) so the app opens without the daemon, where it says
// "daemon unreachable" and reconnects by itself. The API and the event stream are never
// cached: they always go to the network.

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

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(self.clients.matchAll({ type: 'window' }).then((windows) =>
    windows.length ? windows[0].focus() : self.clients.openWindow('/')));
});
