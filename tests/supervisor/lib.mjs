// lib.mjs: helpers for the supervisor's integration tests and benchmark:
// a private Podman service (tests/lib/podman.sh), the supervisor with a
// config of our own, and MCP clients for its users (the official SDK, as
// LibreChat uses).  The basics (paths, sleep, freePort, runPython ...) are
// tests/e2e/harness.mjs's.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import {
  startServer, makeFetch, connectClient, replyOf, repoRoot, supervisorBin, sleep, freePort, runPython,
} from '../e2e/harness.mjs';

export const TOKEN = randomBytes(24).toString('hex');
const version = /^VERSION\s*:=\s*(\S+)/m.exec(readFileSync(join(repoRoot, 'Makefile'), 'utf8'))[1];
export const IMAGE = process.env.VIVARIUM_SANDBOX_IMAGE || `localhost/vivarium-sandbox:${version}`;

// A short tag so that concurrent runs never share names: user ids of a
// run all start with it, and cleanup removes exactly those.
export const TAG = 't' + randomBytes(3).toString('hex');
export const user = (name) => `${TAG}-${name}`;

// The podman CLI on the tests' private storage.
export function vp(...args) {
  return execFileSync('sh', ['-c', `. "${repoRoot}/tests/lib/podman.sh" && vp_env && vpodman "$@"`, 'sh', ...args],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}
export function vpTry(...args) {
  try { return vp(...args); } catch (e) { return null; }
}

// A network through the API of the service on sock (the CLI of Podman 4.3
// cannot name the bridge); spec as libpod's networks/create takes it.
export function makeNetwork(sock, spec) {
  const out = execFileSync('curl', ['-sS', '--unix-socket', sock, '-H', 'Content-Type: application/json',
    '--data-binary', JSON.stringify(spec), '-w', '\n%{http_code}', 'http://d/v4.0.0/libpod/networks/create'],
  { encoding: 'utf8' });
  if (!/\n20[01]$/.test(out)) throw new Error(`could not create network ${spec.name}: ${out}`);
}

// Anonymous volumes: Podman makes one for a container of an image with a
// VOLUME (the sandbox image's /workspace) that mounts nothing there, and
// `rm` without -v leaves it behind, empty, for ever.  The ones there when
// this process first started a service, for cleanup() to tell what it left.
const anonymousVolumes = () => (vpTry('volume', 'ls', '-q') || '').split('\n')
  .filter((v) => /^[0-9a-f]{64}$/.test(v));
let anonymousBefore = null;

// A private `podman system service` on sock; returns { stop() }.
export async function startPodman(sock) {
  if (anonymousBefore === null) anonymousBefore = new Set(anonymousVolumes());
  rmSync(sock, { force: true });
  // vpodman is a shell function: the shell runs it in a process group of
  // its own, and stop() signals the whole group.
  const proc = spawn('sh', ['-c', `. "${repoRoot}/tests/lib/podman.sh" && vp_env && vpodman system service --time 0 "unix://${sock}"`],
    { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let log = '';
  proc.stderr.on('data', (d) => { log += d; });
  const f = makeFetch(sock);
  const deadline = Date.now() + 30000;
  for (;;) {
    try {
      const r = await f('http://d/_ping');
      if ((await r.text()) === 'OK') break;
    } catch { /* not yet */ }
    if (proc.exitCode !== null) throw new Error(`podman service exited:\n${log}`);
    if (Date.now() > deadline) throw new Error(`podman service did not answer:\n${log}`);
    await sleep(50);
  }
  await f.close();
  return {
    sock,
    async stop() {
      if (proc.exitCode !== null) return;
      const done = new Promise((r) => proc.on('exit', r));
      try { process.kill(-proc.pid, 'SIGTERM'); } catch { /* gone */ }
      await Promise.race([done, sleep(5000)]);
      try { process.kill(-proc.pid, 'SIGKILL'); } catch { /* gone */ }
      proc.stderr.destroy();
      rmSync(sock, { force: true });
    },
  };
}

// A directory for the agents' sockets: short, it must fit sun_path.
export function stateDir() {
  const d = `/run/vsv-${TAG}`;
  mkdirSync(d, { recursive: true });
  return d;
}

// Writes a config and starts the supervisor; returns a handle.
export async function startSupervisor({ podmanSock, state, extra = '', port = 0, env = {}, readyTimeout = '60s', image = IMAGE }) {
  const dir = mkdtempSync('/tmp/vsv-conf-');
  const conf = join(dir, 'supervisor.yaml');
  const p = port || await freePort();
  writeFileSync(conf, [
    `listen: 127.0.0.1:${p}`,
    `token: ${TOKEN}`,
    `podman:\n  socket: ${podmanSock}`,
    `state_dir: ${state}`,
    `image: ${image}`,
    `ready_timeout: ${readyTimeout}`,
    extra,
  ].join('\n') + '\n');
  let srv;
  try {
    srv = await startServer(supervisorBin, { args: ['-f', conf], env, timeoutMs: 20000 });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const fetch = makeFetch(null);
  const h = {
    conf, base: srv.baseUrl, proc: srv.proc, stderr: srv.stderr,
    // A raw request to the MCP endpoint (or another path).
    async post(body, { headers = {}, path = '/mcp', method = 'POST', token = TOKEN, userId } = {}) {
      const hd = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers };
      if (token) hd.authorization = `Bearer ${token}`;
      if (userId) hd['x-user-id'] = userId;
      const res = await fetch(`${srv.baseUrl}${path}`, { method, headers: hd, body: method === 'GET' ? undefined : body });
      return replyOf(res);
    },
    async get(path) {
      const res = await fetch(`${srv.baseUrl}${path}`);
      return { status: res.status, text: await res.text() };
    },
    // A connected SDK client for a user (header or path form).
    async client(uid, { viaPath = false, headers: more = {} } = {}) {
      const url = viaPath ? `${srv.baseUrl}/u/${uid}/mcp` : `${srv.baseUrl}/mcp`;
      const headers = { Authorization: `Bearer ${TOKEN}`, ...more };
      if (!viaPath) headers['X-User-ID'] = uid;
      return connectClient(url, { headers, name: 'vivarium-supervisor-test' });
    },
    async stop() {
      if (srv.proc.exitCode === null) {
        const done = new Promise((r) => srv.proc.on('exit', r));
        srv.proc.kill('SIGTERM');
        await Promise.race([done, sleep(10000)]);
        if (srv.proc.exitCode === null) srv.proc.kill('SIGKILL');
      }
      await fetch.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
      // A sanitizer build reports leaks and errors on stderr at exit.
      if (/Sanitizer|runtime error:/.test(srv.stderr()))
        throw new Error(`the supervisor reported a sanitizer error:\n${srv.stderr().slice(-4000)}`);
    },
  };
  return h;
}

// Two sandboxes cannot reach each other.  Nothing listens on TCP in a
// sandbox, so B opens a listener of its own for `wait` seconds (checking
// that it answers on B's address) and A's connection to it must fail;
// control: the same probe connects where something listens (A's own).
export async function assertIsolated(ca, cb, ipA, ipB, wait = 8) {
  assert.match(ipB, /^\d+\.\d+\.\d+\.\d+$/);
  const listenB = runPython(cb, `import socket
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(('0.0.0.0', 9000)); l.listen(8)
c = socket.create_connection((${JSON.stringify(ipB)}, 9000), timeout=3); l.accept()[0].close(); c.close()
print('SELF OK')
l.settimeout(${wait})
try:
    l.accept(); print('SOMEONE CAME')
except socket.timeout:
    print('NOBODY CAME')`);
  await sleep(Math.min(2000, wait * 300));
  const probe = (ip) => `import socket
s = socket.socket(); s.settimeout(${Math.min(3, wait / 2)})
try:
    s.connect((${JSON.stringify(ip)}, 9000)); print('CONNECTED')
except Exception as e:
    print('BLOCKED', type(e).__name__)`;
  let r = await runPython(ca, probe(ipB));
  assert.match(r.text, /BLOCKED/, `A reached B's sandbox: ${r.text}`);
  r = await listenB;
  assert.match(r.text, /SELF OK/, `control: B's listener did not answer on its own address: ${r.text}`);
  assert.match(r.text, /NOBODY CAME/, r.text);
  r = await runPython(ca, `import socket
l = socket.socket(); l.bind(('0.0.0.0', 9000)); l.listen(1)
${probe(ipA)}`);
  assert.match(r.text, /CONNECTED/, `control probe failed: ${r.text}`);
}

// A stand-in for the egress proxy, a container named name on port 3128:
// answers every request with one line, "stand-in proxy".
export function standInProxy(name) {
  vp('run', '-d', '--name', name, '--user', '1000:1000', '--image-volume', 'ignore', '--entrypoint', 'python3', IMAGE, '-c', `import socket
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(('0.0.0.0', 3128)); l.listen(16)
while True:
    c, _ = l.accept()
    try:
        c.settimeout(5); c.recv(65536)
        c.sendall(b'HTTP/1.0 200 OK\\r\\nContent-Type: text/plain\\r\\n\\r\\nstand-in proxy\\n')
    except Exception:
        pass
    c.close()`);
}

// Podman objects of one of our users.
export function objects(uid) {
  const name = `vivarium-${uid}`;
  return {
    containers: vp('ps', '-a', '--filter', `name=^${name}$`, '--format', '{{.ID}} {{.State}}').split('\n').filter(Boolean),
    network: vpTry('network', 'exists', name) !== null,
    volume: vpTry('volume', 'exists', `${name}-workspace`) !== null,
  };
}

export function containerState(uid) {
  return vpTry('inspect', '-f', '{{.State.Status}}', `vivarium-${uid}`);
}

// Removes every object of this run (names start with vivarium-<TAG>-).
export function cleanup() {
  const pre = `vivarium-${TAG}-`;
  for (const c of (vpTry('ps', '-a', '--format', '{{.Names}}') || '').split('\n'))
    if (c.startsWith(pre)) vpTry('rm', '-f', '-v', '-t', '0', c);
  for (const n of (vpTry('network', 'ls', '--format', '{{.Name}}') || '').split('\n'))
    if (n.startsWith(pre)) vpTry('network', 'rm', '-f', n);
  for (const v of (vpTry('volume', 'ls', '--format', '{{.Name}}') || '').split('\n'))
    if (v.startsWith(pre)) vpTry('volume', 'rm', '-f', v);
  rmSync(`/run/vsv-${TAG}`, { recursive: true, force: true });
  // In an after hook, a throw fails the file: each leak shows where it is.
  const left = anonymousBefore ? anonymousVolumes().filter((v) => !anonymousBefore.has(v)) : [];
  for (const v of left) vpTry('volume', 'rm', '-f', v);
  if (left.length > 0) throw new Error(`${left.length} anonymous volume(s) left behind (removed now): ${left.join(' ')}`);
}

export function imagePresent() {
  return vpTry('image', 'exists', IMAGE) !== null;
}

// A test file's own private Podman and supervisor, started before its tests
// and stopped after them, with a first call made for each of `users` so
// that their sandboxes exist and later timings are the runs'.  Returns an
// object whose `sv` is set once the supervisor runs.
export function fileSupervisor({ before, after }, users) {
  const podmanSock = `/run/vsv-${TAG}.podman.sock`;
  const got = { sv: null, podman: null };
  before(async () => {
    got.podman = await startPodman(podmanSock);
    assert.ok(imagePresent(), `${IMAGE} is not in the test storage: run make image-for-tests`);
    got.sv = await startSupervisor({ podmanSock, state: stateDir() });
    for (const u of users) {
      const c = await got.sv.client(u);
      await runPython(c, 'print(1)');
      await c.close();
    }
  });
  after(async () => {
    if (got.sv) await got.sv.stop();
    cleanup();
    if (got.podman) await got.podman.stop();
  });
  return got;
}
