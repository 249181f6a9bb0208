// The daemon's JSON API, as the page calls it. Errors carry the daemon's message, and
// `unreachable` when the request never got an answer (the daemon is down or the network is).
// A 401 means this browser's session ended (the token was rotated): the page reloads, and
// the daemon answers `/` with how to sign in again.

export class ApiError extends Error {
  constructor(message, status, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
  get unreachable() { return this.status === 0; }
}

export async function api(method, path, body) {
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
      cache: 'no-store',
    });
  } catch (error) {
    throw new ApiError('daemon unreachable', 0, 'unreachable');
  }
  if (response.status === 401) {
    location.reload();
    throw new ApiError('signed out', 401, 'unauthorized');
  }
  if (!response.ok) {
    const detail = await response.json().catch(() => null);
    throw new ApiError(detail?.error?.message ?? response.statusText, response.status, detail?.error?.code);
  }
  return response.status === 204 ? null : response.json();
}

export const get = (path) => api('GET', path);
export const post = (path, body) => api('POST', path, body ?? {});
export const patch = (path, body) => api('PATCH', path, body);
export const del = (path) => api('DELETE', path);

/** An agent's path segment. */
export const agentPath = (name) => `/api/agents/${encodeURIComponent(name)}`;
