// Web Push for this browser: "Notify me" subscribes it (the service worker's pushManager,
// with the daemon's VAPID key) and hands the subscription to the daemon, which then reaches
// the person with the page closed. Also lists and removes the subscribed devices. iOS offers
// push only to the app added to the home screen.

import { get, post, api } from './api.js';

function b64urlToBytes(text) {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/');
  const raw = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

/** What the person would call this device. */
function deviceName() {
  const ua = navigator.userAgent;
  const platform = navigator.userAgentData?.platform
    || (/Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac/.test(ua) ? 'Mac'
      : /Windows/.test(ua) ? 'Windows' : /Linux/.test(ua) ? 'Linux' : 'a browser');
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox'
    : /Chrome\//.test(ua) ? 'Chrome' : /Safari\//.test(ua) ? 'Safari' : 'Browser';
  return `${browser} on ${platform}`;
}

export class Push {
  get supported() {
    return window.isSecureContext && 'serviceWorker' in navigator && 'PushManager' in window
      && 'Notification' in window;
  }

  async registration() { return navigator.serviceWorker.ready; }

  /** This browser's subscription, if it has one. */
  async current() {
    if (!this.supported) return null;
    const registration = await this.registration();
    return registration.pushManager.getSubscription();
  }

  /** From a click: permission, then the push service's subscription, then the daemon. */
  async subscribe() {
    if ((await Notification.requestPermission()) !== 'granted') {
      throw new Error('notifications are blocked for this site');
    }
    const { public_key: key } = await get('/api/notify/vapid');
    const registration = await this.registration();
    let subscription = await registration.pushManager.getSubscription();
    if (subscription) await subscription.unsubscribe();
    subscription = await registration.pushManager.subscribe({
      userVisibleOnly: true,
      applicationServerKey: b64urlToBytes(key),
    });
    return post('/api/notify/subscriptions', { ...subscription.toJSON(), name: deviceName() });
  }

  /** The devices the daemon pushes to. */
  async devices() { return (await get('/api/notify/subscriptions')).subscriptions; }

  async remove(id) { await api('DELETE', `/api/notify/subscriptions/${encodeURIComponent(id)}`); }

  /** Whether this browser's subscription is among the daemon's devices. */
  async on() {
    const subscription = await this.current().catch(() => null);
    if (!subscription) return false;
    const devices = await this.devices().catch(() => []);
    return devices.some((d) => d.endpoint === subscription.endpoint);
  }
}
