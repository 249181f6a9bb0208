// Tells the person when a task needs them or ends while the page is hidden: a count in the
// title always, and a system notification once they allowed it (the permission is asked from
// a click, as browsers require). Notifications go through the service worker when there is
// one (Android Chrome refuses `new Notification`), else directly.

const TITLE = 'LazyBoy';

export class Notifier {
  constructor() {
    this.count = 0;
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) { this.count = 0; document.title = TITLE; }
    });
  }

  get supported() { return 'Notification' in window && window.isSecureContext; }
  get allowed() { return this.supported && Notification.permission === 'granted'; }

  /** From a click: asks for permission. */
  async ask() {
    if (!this.supported) return false;
    return (await Notification.requestPermission()) === 'granted';
  }

  /** An event happened while hidden that the person should hear about. */
  async tell(title, body, tag) {
    if (!document.hidden) return;
    this.count += 1;
    document.title = `(${this.count}) ${TITLE}`;
    if (!this.allowed) return;
    const options = { body, tag, icon: '/assets/icons/icon-192.png', renotify: true };
    try {
      const registration = await navigator.serviceWorker?.getRegistration();
      if (registration) await registration.showNotification(title, options);
      else new Notification(title, options);
    } catch (error) { console.warn('notification', error); }
  }
}
