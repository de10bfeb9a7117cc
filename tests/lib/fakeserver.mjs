// tests/lib/fakeserver.mjs: the HTTP plumbing of the tests' fake API
// servers, tests/k8s/fakeapi.mjs (a Kubernetes API server) and
// tests/deploy/fake_podman.mjs (Podman's API as another host would show it).
// We fake a service at its API only where the real one cannot show what a
// test needs; each fake keeps its own answers, and this file what they all
// need the same: listening, routing, a log of requests, injected faults,
// going down and coming back.
//
//   const srv = await startFakeServer({
//     listen: { host: '127.0.0.1', port: 0 } or { path: SOCKET },  (TCP or a unix socket)
//     tls: { key, cert },        PEM: HTTPS (else plain HTTP); refused handshakes in srv.tlsErrors
//     routes: [[METHOD or '*', '/exact/path' or /regexp/, handler], ...],  first match wins
//     before: handler,           every request first (an auth check); answering ends it
//     fallback: handler,         no route matched (default: 404 and a JSON message)
//     headers: () => ({}),       more headers on each JSON reply
//     faultKeys: ['method', 'path'],  the fields of an injected rule that pick requests
//     log: (...args) => {},      where a handler's exception is told
//   });
//   handler(c), c = { req, res, url, params (the regexp's match), rec, reply(code, body), drop() }
//   c.reply(code, body)   JSON with Content-Length (204: no body), recorded in rec
//   c.drop()              the connection closed, no reply (a crashed or cut-off server)
//   srv.requests   every request: { time, method, path, query, rawBody, body (parsed JSON:
//                  null when empty, undefined when not JSON), status, reply } and what
//                  the handlers add
//   srv.inject({ ...keys, status, times })  a fault rule, returned (rule.hits counts uses);
//                  srv.fault(facts) takes the first rule whose set keys all equal the
//                  request's facts (a use of it), or null; what status means is the
//                  fake's ('drop' by convention: c.drop()).  srv.faults, srv.clearFaults()
//   srv.port, srv.url (TCP)
//   await srv.down() / srv.up()   connections refused (open ones cut) / back at the same address
//   await srv.close()
import http from 'node:http';
import https from 'node:https';
import { rmSync } from 'node:fs';

export async function startFakeServer({ listen: where = { host: '127.0.0.1', port: 0 }, tls = null,
  routes = [], before = null, fallback = null, headers = () => ({}), faultKeys = ['method', 'path'],
  log = () => {} } = {}) {
  const requests = [], faults = [], tlsErrors = [];
  const sockets = new Set();

  async function handle(req, res) {
    const url = new URL(req.url, 'http://x');
    const chunks = [];
    for await (const ch of req) chunks.push(ch);
    const raw = Buffer.concat(chunks).toString('utf8');
    const rec = { time: Date.now(), method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams),
      rawBody: raw, body: null };
    try { rec.body = raw ? JSON.parse(raw) : null; } catch { rec.body = undefined; }
    requests.push(rec);
    const c = {
      req, res, url, rec, params: null, answered: false,
      reply(code, body) {
        c.answered = true;
        rec.status = code;
        rec.reply = body;
        const b = code === 204 || body === undefined ? '' : JSON.stringify(body);
        res.writeHead(code, { 'Content-Type': 'application/json', ...(code === 204 ? {} : { 'Content-Length': Buffer.byteLength(b) }),
          ...headers() });
        res.end(b);
      },
      drop() { c.answered = true; req.socket.destroy(); },
    };
    if (before) {
      await before(c);
      if (c.answered) return;
    }
    for (const [method, pattern, fn] of routes) {
      if (method !== '*' && method !== req.method) continue;
      if (typeof pattern === 'string' ? pattern !== url.pathname : !(c.params = pattern.exec(url.pathname))) continue;
      return fn(c);
    }
    if (fallback) return fallback(c);
    return c.reply(404, { message: `no ${req.method} ${url.pathname} in this fake` });
  }

  const onRequest = (req, res) => {
    handle(req, res).catch((e) => { log('handler error', e); try { res.destroy(); } catch { /* gone */ } });
  };
  const server = tls ? https.createServer({ key: tls.key, cert: tls.cert }, onRequest) : http.createServer(onRequest);
  // Each connection, to cut them all on down(): close() alone waits for them.
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  server.on('tlsClientError', (e) => { tlsErrors.push(e.message); });
  const listen = (addr) => new Promise((res, rej) => {
    server.once('error', rej);
    const up = () => { server.off('error', rej); res(server.address()); };
    if (addr.path) {
      rmSync(addr.path, { force: true });	// a socket left by a killed run
      server.listen(addr.path, up);
    } else server.listen(addr.port, addr.host, up);
  });
  const bound = await listen(where);
  // Up again at the same address, not a new port a client was never told.
  const addr = where.path ? where : { host: where.host, port: bound.port };

  const srv = {
    requests, faults, tlsErrors,
    port: addr.port,
    url: addr.path ? undefined : `${tls ? 'https' : 'http'}://${addr.host}:${addr.port}`,
    inject(rule) {
      const f = { ...rule, hits: 0 };
      f.times ??= Infinity;
      faults.push(f);
      return f;
    },
    fault(facts) {
      for (const f of faults) {
        if (f.times <= 0) continue;
        if (faultKeys.some((k) => f[k] && f[k] !== facts[k])) continue;
        f.times--;
        f.hits++;
        return f;
      }
      return null;
    },
    clearFaults() { faults.length = 0; },
    async down() {
      await new Promise((r) => { server.close(() => r()); for (const s of sockets) s.destroy(); });
    },
    async up() { await listen(addr); },
    async close() { await srv.down().catch(() => {}); },
  };
  return srv;
}
