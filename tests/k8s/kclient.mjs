// kclient.mjs: a minimal client for the fake API server, for tests that
// talk to it directly (what the supervisor's backend does in C).
import https from 'node:https';

// kube(api).req('GET', path[, body]) -> { status, json, text }
// kube(api).watch(path) -> { events (array, filled as they come), done (promise), close() }
export function kube(api, { token = api.token, ca = api.caPem } = {}) {
  const opts = (method, path, extra = {}) => {
    const u = new URL(path, api.url);
    return {
      method, host: u.hostname, port: u.port, path: u.pathname + u.search, ca,
      headers: { Authorization: `Bearer ${token}`, Accept: 'application/json', ...extra },
      agent: false,
    };
  };
  return {
    req(method, path, body) {
      return new Promise((res, rej) => {
        const b = body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body));
        const r = https.request(opts(method, path, b ? { 'Content-Type': 'application/json' } : {}), (resp) => {
          let text = '';
          resp.setEncoding('utf8');
          resp.on('data', (d) => { text += d; });
          resp.on('end', () => {
            let json = null;
            try { json = JSON.parse(text); } catch { /* not JSON */ }
            res({ status: resp.statusCode, headers: resp.headers, text, json });
          });
        });
        r.on('error', rej);
        if (b) r.write(b);
        r.end();
      });
    },
    watch(path) {
      const events = [];
      let req;
      let waiters = [];
      const done = new Promise((res, rej) => {
        req = https.request(opts('GET', path), (resp) => {
          let buf = '';
          resp.setEncoding('utf8');
          resp.on('data', (d) => {
            buf += d;
            let i;
            while ((i = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, i);
              buf = buf.slice(i + 1);
              if (line.trim()) events.push(JSON.parse(line));
            }
            waiters = waiters.filter((w) => !w());
          });
          resp.on('end', () => res({ status: resp.statusCode, events, ended: true }));
          resp.on('error', (e) => res({ status: resp.statusCode, events, error: e }));
          resp.on('aborted', () => res({ status: resp.statusCode, events, aborted: true }));
        });
        req.on('error', (e) => res({ events, error: e }));
        req.end();
      });
      return {
        events, done,
        close() { req.destroy(); },
        // Resolves once pred(events) holds (or rejects after ms).
        until(pred, ms = 10000) {
          return new Promise((res, rej) => {
            const t = setTimeout(() => rej(new Error(`watch: condition not met in ${ms} ms; events: ${events.map((e) => e.type).join(',')}`)), ms);
            const check = () => { if (pred(events)) { clearTimeout(t); res(events); return true; } return false; };
            if (!check()) waiters.push(check);
          });
        },
      };
    },
  };
}
