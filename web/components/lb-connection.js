// <lb-connection>: how the page is connected, in words: live, reconnecting, polling (the
// stream is blocked), or daemon unreachable. `live` is the Live instance it watches.

const TEXT = {
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'reconnecting…',
  polling: 'stream blocked: polling every 2 s',
  unreachable: 'daemon unreachable, reconnecting…',
};

class Connection extends HTMLElement {
  set live(live) {
    this.setAttribute('role', 'status');
    const show = () => {
      this.textContent = TEXT[live.status] ?? live.status;
      this.dataset.status = live.status;
    };
    live.addEventListener('status', show);
    show();
  }
}
customElements.define('lb-connection', Connection);
