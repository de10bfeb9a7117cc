// Integration tests of vivarium-supervisor against a private Podman service
// and the real sandbox image, driven by the official MCP SDK client.
// Run by `make test-supervisor` (tests/supervisor/run.sh).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync, rmSync, statSync, readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import { sleep, runPython, ctlBin } from '../e2e/harness.mjs';
import {
  TOKEN, TAG, IMAGE, user, vp, startPodman, stateDir, startSupervisor, objects, containerState,
  cleanup, imagePresent, assertIsolated, standInProxy, vpTry,
} from './lib.mjs';

const podmanSock = `/run/vsv-${TAG}.podman.sock`;
let podman, sv, state;

before(async () => {
  podman = await startPodman(podmanSock);
  assert.ok(imagePresent(), `${IMAGE} is not in the test storage: run make image-for-tests`);
  state = stateDir();
  sv = await startSupervisor({ podmanSock, state });
});

after(async () => {
  if (sv) await sv.stop();
  cleanup();
  if (podman) await podman.stop();
});

test('two users get separate containers, networks and volumes, and cannot reach each other', async () => {
  const a = user('alice'), b = user('bob');
  const ca = await sv.client(a);
  const cb = await sv.client(b, { viaPath: true });
  let r = await runPython(ca, "open('mine.txt','w').write('alice'); print('hello from a')");
  assert.match(r.text, /hello from a/);
  r = await runPython(cb, "import os; print(sorted(os.listdir('.')))");
  assert.doesNotMatch(r.text, /mine\.txt/, 'bob must not see alice\'s files');
  for (const u of [a, b]) {
    const o = objects(u);
    assert.equal(o.containers.length, 1, `one container for ${u}`);
    assert.ok(o.network && o.volume, `network and volume for ${u}`);
  }
  // Internal networks on bridges named by the supervisor, one per user.
  const bridges = [a, b].map((u) => vp('network', 'inspect', '-f', '{{.NetworkInterface}} {{.Internal}}', `vivarium-${u}`));
  for (const br of bridges) assert.match(br, /^viv[0-9a-f]{12} true$/);
  assert.notEqual(bridges[0], bridges[1]);
  // Each on its own internal network only.
  const netsA = vp('inspect', '-f', '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}', `vivarium-${a}`).trim();
  assert.equal(netsA, `vivarium-${a}`);
  const ipB = vp('inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', `vivarium-${b}`);
  const ipA = vp('inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', `vivarium-${a}`);
  await assertIsolated(ca, cb, ipA, ipB);
  await ca.close(); await cb.close();
});

test('a user named like a file in state_dir gets users/<id>, the file stays the supervisor\'s', async () => {
  const u = user('token');
  // What make run's token is to a user called "token": a file of the
  // supervisor's, in state_dir, under the user's name.
  writeFileSync(`${state}/${u}`, 'not-for-sandboxes', { mode: 0o600 });
  const c = await sv.client(u);
  const r = await runPython(c, "import os; print(sorted(os.listdir('/run/vivarium')))");
  assert.match(r.text, /\['agent\.sock'\]/);
  await c.close();
  const st = statSync(`${state}/${u}`);
  assert.ok(st.isFile());
  assert.equal(st.uid, 0, 'the file was handed to the sandbox user');
  assert.equal(st.mode & 0o777, 0o600);
  const d = statSync(`${state}/users/${u}`);
  assert.ok(d.isDirectory());
  // The supervisor's, the sandbox's group (its slot's gid 1000), sealed.
  assert.equal(d.uid, 0);
  assert.equal(d.gid, hostIds(u).gid);
  assert.equal(d.mode & 0o777, 0o750);
  const src = vp('inspect', '-f', '{{range .Mounts}}{{if eq .Destination "/run/vivarium"}}{{.Source}}{{end}}{{end}}', `vivarium-${u}`).trim();
  assert.equal(src, `${state}/users/${u}`);
  rmSync(`${state}/${u}`);
});

// The host ids a user's sandbox runs as: its init's uid and gid as the
// host's /proc shows them (Uid: real effective saved fs).
function hostIds(u) {
  const pid = vp('inspect', '-f', '{{.State.Pid}}', `vivarium-${u}`);
  const st = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { uid: Number(/^Uid:\s+(\d+)/m.exec(st)[1]), gid: Number(/^Gid:\s+(\d+)/m.exec(st)[1]) };
}

// A connect to a unix socket as a host uid:gid: "OK", or the error.
function connectAs(uid, gid, sock) {
  return execFileSync('setpriv', [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '/usr/bin/python3', '-c', `import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print('OK')
except OSError as e:
    print(type(e).__name__)`, sock], { encoding: 'utf8' }).trim();
}

test('each sandbox runs as host ids of its own: no other uid reaches its socket, and RLIMIT_NPROC counts each apart', async () => {
  const a = user('uida'), b = user('uidb');
  const ca = await sv.client(a), cb = await sv.client(b);
  await runPython(ca, 'print(1)');
  await runPython(cb, 'print(1)');
  const ia = hostIds(a), ib = hostIds(b);
  // Inside, both are the image's user 1000; on the host, neither is.
  assert.match((await runPython(ca, 'import os; print("ids", os.getuid(), os.getgid())')).text, /ids 1000 1000/);
  for (const i of [ia, ib]) {
    assert.ok(i.uid >= 1000000000 + 65536, `a host uid of a slot's own: ${i.uid}`);
    assert.equal((i.uid - 1000000000) % 65536, 1000, `uid 1000 of a slot: ${i.uid}`);
  }
  assert.notEqual(ia.uid, ib.uid);
  assert.notEqual(ia.gid, ib.gid);
  assert.equal(Math.abs(ia.uid - ib.uid) % 65536, 0, 'whole ranges apart');
  assert.equal(vp('inspect', '-f', '{{index .Config.Labels "io.vivarium.ids"}}', `vivarium-${a}`),
    `${ia.uid - 1000}+65536`);
  // state_dir is the supervisor's alone.
  assert.equal(statSync(state).mode & 0o777, 0o700);
  // A's host uid cannot reach B's agent, nor its own from outside; the
  // supervisor (root) reaches both.
  const sockB = `${state}/users/${b}/agent.sock`;
  assert.equal(connectAs(ia.uid, ia.gid, sockB), 'PermissionError');
  assert.equal(connectAs(1000, 1000, sockB), 'PermissionError', 'the old shared uid 1000');
  assert.equal(connectAs(0, 0, sockB), 'OK');
  // A keeps 80 processes alive; B, allowed 40 processes of its user,
  // still forks: the count is B's alone (one shared uid would be 80+).
  const hold = runPython(ca, `import subprocess, time
ps = [subprocess.Popen(['sleep', '12']) for _ in range(80)]
print('holding', len(ps)); time.sleep(10)
for p in ps: p.kill()`);
  await sleep(3000);
  const r = await runPython(cb, `import os, resource
resource.setrlimit(resource.RLIMIT_NPROC, (40, 40))
try:
    pid = os.fork()
    if pid == 0: os._exit(0)
    os.waitpid(pid, 0); print('FORKED')
except BlockingIOError as e:
    print('STARVED', e)`);
  assert.match(r.text, /FORKED/, r.text);
  assert.match((await hold).text, /holding 80/);
  await ca.close(); await cb.close();
});

test('a full workspace is said plainly, the stored namespace stays, the host disk is untouched', async () => {
  const u = user('full');
  const port = Number(new URL(sv.base).port);
  await sv.stop();
  sv = await startSupervisor({ podmanSock, state, port, extra: `users:\n  ${u}:\n    workspace: 20m` });
  const c = await sv.client(u);
  let r = await runPython(c, "x = 41\nopen('small.txt','w').write('kept')\nimport shutil; print('total', shutil.disk_usage('.').total)");
  const total = Number(/total (\d+)/.exec(r.text)[1]);
  assert.ok(total > 10e6 && total <= 20 * 1024 * 1024, `a 20 MB filesystem: ${total}`);
  assert.match(r.text, /namespace size/);
  const img = `${state}/workspaces/${u}.img`;
  const mp = vp('volume', 'inspect', '-f', '{{.Mountpoint}}', `vivarium-${u}-workspace`);
  assert.match(execFileSync('findmnt', ['-no', 'FSTYPE,SOURCE', mp], { encoding: 'utf8' }), /^ext4\s+\/dev\/loop/);
  // Fill it: the write fails with ENOSPC, and the footer says why.
  r = await runPython(c, "f = open('big.bin', 'wb')\nfor i in range(40): f.write(b'x' * (1 << 20))");
  assert.match(r.text, /No space left on device/, r.text);
  assert.match(r.text, /workspace full: .* free of /, r.text);
  // A namespace that cannot be saved now: the old store is left as it was.
  r = await runPython(c, "import os\ny = os.urandom(4 << 20)\nprint('made y')");
  assert.match(r.text, /made y/);
  assert.match(r.text, /namespace not saved \(the stored one is unchanged\): the workspace is full/, r.text);
  r = await runPython(c, "print(x + 1, open('small.txt').read(), 'y' in globals())");
  assert.match(r.text, /42 kept False/, r.text);
  // The host holds only what was written: the image is sparse, 20 MB at most.
  const st = statSync(img);
  assert.equal(st.size, 20 * 1024 * 1024);
  assert.ok(st.blocks * 512 <= 21 * 1024 * 1024, `blocks on the host: ${st.blocks * 512}`);
  // Room again once a file goes.
  r = await runPython(c, "import os; os.remove('big.bin'); z = 7");
  assert.doesNotMatch(r.text, /workspace full/, r.text);
  r = await runPython(c, 'print(x, z)');
  assert.match(r.text, /41 7/);
  await c.close();
  // vivariumctl status says what the user gets.
  const out = JSON.parse(execFileSync(ctlBin, ['-f', sv.conf, '--json', 'status', u], { encoding: 'utf8' }));
  assert.equal(out.limits.workspace_bytes, 20 * 1024 * 1024);
  assert.equal(out.quota_enforced, true);
  assert.match(out.host_ids, /^\d+\+65536$/);
});

test('20 concurrent first requests for one user create one container', async () => {
  const u = user('crowd');
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  const rs = await Promise.all(Array.from({ length: 20 }, () => sv.post(body, { userId: u })));
  for (const r of rs) assert.equal(r.status, 200, r.text);
  assert.equal(objects(u).containers.length, 1);
  const created = (sv.stderr().match(new RegExp(`vivarium-${u}: ready in \\d+ ms \\(created\\)`, 'g')) || []).length;
  assert.equal(created, 1, 'one creation logged');
});

test('bad requests are refused clearly and the supervisor keeps serving', async () => {
  const u = user('alice');
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  let r = await sv.post(ping, { userId: u, token: 'not-the-token' });
  assert.equal(r.status, 401);
  assert.match(r.json.error.message, /wrong token/);
  r = await sv.post(ping, { userId: u, token: null });
  assert.equal(r.status, 401);
  assert.match(r.json.error.message, /missing Authorization/);
  r = await sv.post(ping, {});
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, /missing X-User-ID header/);
  for (const bad of ['Alice', 'a_b', '-x', 'x'.repeat(64), 'a.b', 'a%2fb']) {
    r = await sv.post(ping, { userId: bad });
    assert.equal(r.status, 400, bad);
    assert.match(r.json.error.message, /lowercase letters a-z, digits and '-'/);
  }
  r = await sv.post(ping, { path: '/u/Bad_User/mcp' });
  assert.equal(r.status, 400);
  r = await sv.post(ping, { userId: u, headers: { origin: 'http://evil.example.com' } });
  assert.equal(r.status, 403);
  // curl, not fetch: the 413 comes before the body is read, and curl shows
  // it where fetch only reports the closed upload.
  writeFileSync(`/tmp/vsv-big-${TAG}`, Buffer.alloc(5 * 1024 * 1024, 'x'));
  const big = execFileSync('curl', ['-s', '-w', '\n%{http_code}', '-H', `Authorization: Bearer ${TOKEN}`,
    '-H', `X-User-ID: ${u}`, '-H', 'Content-Type: application/json', '--data-binary', `@/tmp/vsv-big-${TAG}`,
    `${sv.base}/mcp`], { encoding: 'utf8' });
  rmSync(`/tmp/vsv-big-${TAG}`);
  assert.match(big, /too large[\s\S]*\n413$/);
  r = await sv.post(ping, { userId: u, method: 'PUT' });
  assert.equal(r.status, 405);
  r = await sv.post(ping, { path: '/nope' });
  assert.equal(r.status, 404);
  // None of that created anything, and the next good request works.
  assert.equal(objects('Alice').containers.length, 0);
  r = await sv.post(ping, { userId: u });
  assert.equal(r.status, 200);
  assert.deepEqual(r.json.result, {});
  r = await sv.get('/health');
  assert.equal(r.status, 200);
  r = await sv.get('/metrics');
  assert.match(r.text, /vivarium_requests_total\{code="401"\} 2/);
  assert.match(r.text, /vivarium_sandboxes\{state="ready"\} \d+/);
  assert.match(r.text, /vivarium_spawn_seconds_count [1-9]/);
});

// One raw HTTP/1.1 request (fetch can send neither a NUL in a header nor a
// header twice): the status and the body.
function rawPost(base, path, headerLines, body) {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(port), hostname);
    const chunks = [];
    s.on('data', (d) => chunks.push(d));
    s.on('error', reject);
    s.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ status: m ? Number(m[1]) : 0, text });
    });
    s.write(Buffer.concat([
      Buffer.from(`POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n` +
        'Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n`, 'latin1'),
      ...headerLines.map((h) => Buffer.concat([Buffer.from(h, 'latin1'), Buffer.from('\r\n')])),
      Buffer.from(`\r\n${body}`),
    ]));
  });
}

test('ambiguous identity is refused with a 400 that says why', async () => {
  // b has no sandbox: none may be made for it by any of these.
  const a = user('alice'), b = user('mallet');
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  const auth = `Authorization: Bearer ${TOKEN}`;
  for (const [name, path, lines, why] of [
    ['a NUL inside the user id', '/mcp', [auth, `X-User-ID: ${a}\0${b}`], /X-User-ID header holds a NUL/],
    ['a NUL and junk after the token', '/mcp', [`${auth}\0junk`, `X-User-ID: ${a}`], /Authorization header holds a NUL/],
    ['two X-User-ID headers', '/mcp', [auth, `X-User-ID: ${a}`, `X-User-ID: ${b}`], /X-User-ID header is sent 2 times/],
    ['two Authorization headers', '/mcp', [auth, `${auth}`, `X-User-ID: ${a}`], /Authorization header is sent 2 times/],
    ['a path and a header naming two users', `/u/${a}/mcp`, [auth, `X-User-ID: ${b}`], new RegExp(`the path names user \\\\"${a}\\\\" but the X-User-ID header names \\\\"${b}\\\\"`)],
    ['the header twice on the path form', `/u/${a}/mcp`, [auth, `X-User-ID: ${a}`, `x-user-id: ${a}`], /sent 2 times/],
  ]) {
    const r = await rawPost(sv.base, path, lines, ping);
    assert.equal(r.status, 400, `${name}: ${r.text}`);
    assert.match(r.text, why, name);
  }
  // The same name in both places is no ambiguity.
  const r = await rawPost(sv.base, `/u/${a}/mcp`, [auth, `X-User-ID: ${a}`], ping);
  assert.equal(r.status, 200, r.text);
  assert.equal(objects(b).containers.length, 0, 'nothing was made for the other name');
});

test('idle connections never lock the supervisor out (poll, per-address cap, room made before the token)', async () => {
  const a = user('alice');
  const { port } = new URL(sv.base);
  const held = [];
  const flood = async (src, n) => {
    for (let i = 0; i < n; i++) {
      const s = net.connect({ port: Number(port), host: '127.0.0.1', localAddress: src });
      s.on('error', () => {});
      held.push(s);
    }
    await sleep(1500);
  };
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  try {
    // Past FD_SETSIZE from one address (a select() daemon locked up at
    // about 1,100), then more than max_connections from eight.
    await flood('127.0.0.2', 1100);
    let t0 = Date.now();
    let r = await sv.get('/health');
    assert.equal(r.status, 200);
    r = await sv.post(ping, { userId: a });
    assert.equal(r.status, 200, r.text);
    for (let k = 3; k < 10; k++) await flood(`127.0.0.${k}`, 200);
    t0 = Date.now();
    r = await sv.get('/health');
    assert.equal(r.status, 200);
    r = await sv.post(ping, { userId: a });
    assert.equal(r.status, 200, r.text);
    assert.ok(Date.now() - t0 < 5000, `served in ${Date.now() - t0} ms`);
    // Silent connections go after auth_timeout (10 s by default).
    await sleep(11000);
    const open = held.filter((s) => s.readyState === 'open' && !s.readableEnded).length;
    assert.equal(open, 0, `${open} idle connections still open`);
  } finally {
    for (const s of held) s.destroy();
  }
});

test('a killed and removed sandbox is recreated with the files intact', async () => {
  const u = user('phoenix');
  let c = await sv.client(u);
  await runPython(c, "open('keep.txt','w').write('still here')");
  const id1 = objects(u).containers[0].split(' ')[0];
  vp('kill', `vivarium-${u}`);
  vp('rm', `vivarium-${u}`);
  await c.close();
  c = await sv.client(u);
  const r = await runPython(c, "print(open('keep.txt').read())");
  assert.match(r.text, /still here/);
  const ids = objects(u).containers;
  assert.equal(ids.length, 1);
  assert.notEqual(ids[0].split(' ')[0], id1, 'a new container');
  await c.close();
});

test('restarting the supervisor adopts running sandboxes (no twins) and removes one stuck in created', async () => {
  const u = user('alice');
  const stuck = user('stuck');
  const ids = () => objects(u).containers.map((c) => c.split(' ')[0]);
  const before = ids();
  // A container that was created but never started, as after a crash.
  vp('volume', 'create', '--label', 'io.vivarium.managed=true', '--label', `io.vivarium.user=${stuck}`, `vivarium-${stuck}-workspace`);
  vp('create', '--name', `vivarium-${stuck}`, '--label', 'io.vivarium.managed=true',
    '--label', `io.vivarium.user=${stuck}`, '-v', `vivarium-${stuck}-workspace:/workspace`, IMAGE);
  assert.equal(containerState(stuck), 'created');
  const port = Number(new URL(sv.base).port);
  await sv.stop();
  sv = await startSupervisor({ podmanSock, state, port });
  assert.match(sv.stderr(), /adopted \d+ sandbox/);
  assert.match(sv.stderr(), new RegExp(`vivarium-${stuck}: removing a container stuck in "created"`));
  assert.equal(containerState(stuck), null, 'stuck container removed');
  const c = await sv.client(u);
  const r = await runPython(c, "print(open('mine.txt').read())");
  assert.match(r.text, /alice/);
  assert.deepEqual(ids(), before, 'same container, no twin');
  await c.close();
  // The stuck user is served by a fresh container on its old volume.
  const cs = await sv.client(stuck);
  assert.match((await runPython(cs, 'print(6*7)')).text, /42/);
  assert.equal(objects(stuck).containers.length, 1);
  await cs.close();
});

test('Podman stopped gives a clear 503; back again, the supervisor recovers', async () => {
  const u = user('late');
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  await podman.stop();
  let r = await sv.post(ping, { userId: u });
  assert.equal(r.status, 503);
  assert.match(r.json.error.message, /Podman is not reachable/);
  // A running sandbox keeps answering without Podman.
  r = await sv.post(ping, { userId: user('alice') });
  assert.equal(r.status, 200);
  podman = await startPodman(podmanSock);
  r = await sv.post(ping, { userId: u });
  assert.equal(r.status, 200, r.text);
  r = await sv.get('/metrics');
  assert.match(r.text, /vivarium_backend_errors_total\{backend="podman"\} [1-9]/);
  assert.match(r.text, /vivarium_podman_errors_total [1-9]/);  // the old name, one release
});

test('vivariumctl: add-user, list, status, stop, start, remove-user --purge', async (t) => {
  const u = user('ctl');
  // An image an operator derived from ours, with a VOLUME of its own:
  // Podman would give each container an anonymous volume there, which no
  // removal takes with it (cleanup's check of anonymous volumes fails).
  const derived = `localhost/vivarium-test-derived:${TAG}`;
  const ctx = mkdtempSync(join(tmpdir(), 'vsv-derived-'));
  writeFileSync(join(ctx, 'Containerfile'), `FROM ${IMAGE}\nVOLUME /scratch\n`);
  vp('build', '-q', '-t', derived, ctx);
  rmSync(ctx, { recursive: true, force: true });
  t.after(() => vpTry('rmi', '-f', derived));
  const env = { ...process.env, VIVARIUM_PODMAN_SOCKET: podmanSock, VIVARIUM_STATE_DIR: state, VIVARIUM_SANDBOX_IMAGE: derived };
  const ctl = (...args) => {
    try {
      return { code: 0, out: execFileSync(ctlBin, args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) };
    } catch (e) { return { code: e.status, out: e.stdout, err: e.stderr }; }
  };
  assert.equal(ctl('status', u).code, 3, 'unknown user: exit 3');
  assert.equal(ctl('add-user', 'Bad_Id').code, 2);
  let r = ctl('add-user', u);
  assert.equal(r.code, 0, r.err);
  assert.equal(ctl('status', u).code, 0, 'added and running: exit 0');
  assert.equal(ctl('stop', u).code, 0);
  assert.equal(ctl('status', u).code, 5, 'stopped: exit 5');
  r = ctl('start', u);
  assert.equal(r.code, 0, r.err);
  r = ctl('--json', 'status', u);
  assert.equal(r.code, 0);
  const st = JSON.parse(r.out);
  assert.equal(st.state, 'running');
  assert.equal(st.agent_answers, true);
  r = ctl('--json', 'list');
  assert.ok(JSON.parse(r.out).some((x) => x.user === u && x.state === 'running'));
  assert.match(ctl('list').out, new RegExp(`${u}\\s+-\\s+running`));
  assert.equal(ctl('stop', u).code, 0);
  assert.equal(ctl('status', u).code, 5);
  const mounts = vp('inspect', '--format', '{{range .Mounts}}{{.Destination}} {{end}}', `vivarium-${u}`);
  assert.match(mounts, /\/workspace/);
  assert.doesNotMatch(mounts, /\/scratch/, 'no anonymous volume for the derived image\'s VOLUME');
  assert.equal(ctl('remove-user', u).code, 0);
  assert.ok(objects(u).volume, 'volume kept without --purge');
  assert.equal(objects(u).containers.length, 0);
  assert.equal(ctl('remove-user', '--purge', u).code, 0);
  assert.ok(!objects(u).volume, 'volume gone with --purge');
  assert.equal(ctl('remove-user', u).code, 3);
  // Podman down: exit 4 and a sentence that says so.
  r = execFileSync('sh', ['-c', `"${ctlBin}" list; echo "rc=$?"`], { env: { ...env, VIVARIUM_PODMAN_SOCKET: '/nonexistent.sock' }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  assert.match(r, /rc=4/);
});

test('provisioning manual and allowlist refuse unknown users clearly', async () => {
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
  const port = Number(new URL(sv.base).port);
  const listed = user('listed'), stranger = user('stranger'), added = user('added');
  await sv.stop();
  sv = await startSupervisor({ podmanSock, state, port, extra: [
    'provisioning: allowlist', 'users:', `  ${listed}:`, '    memory: 1g'].join('\n') });
  let r = await sv.post(ping, { userId: stranger });
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, /only serves the users listed/);
  assert.equal(objects(stranger).containers.length, 0);
  const c = await sv.client(listed);
  assert.match((await runPython(c, 'print(6*7)')).text, /42/);
  // The per-user override reached Podman.
  assert.equal(vp('inspect', '-f', '{{.HostConfig.Memory}}', `vivarium-${listed}`), String(1 << 30));
  await c.close();

  await sv.stop();
  sv = await startSupervisor({ podmanSock, state, port, extra: 'provisioning: manual' });
  r = await sv.post(ping, { userId: added });
  assert.equal(r.status, 400);
  assert.match(r.json.error.message, new RegExp(`vivariumctl add-user ${added}`));
  execFileSync(ctlBin, ['add-user', added], { env: { ...process.env, VIVARIUM_PODMAN_SOCKET: podmanSock, VIVARIUM_STATE_DIR: state, VIVARIUM_SANDBOX_IMAGE: IMAGE } });
  r = await sv.post(ping, { userId: added });
  assert.equal(r.status, 200, r.text);
});

test('a sandbox resolves no names, has no working resolver and listens on no TCP port', async () => {
  const u = user('nodns');
  const port = Number(new URL(sv.base).port);
  await sv.stop();
  sv = await startSupervisor({ podmanSock, state, port });
  const c = await sv.client(u);
  const r = await runPython(c, `import os, socket
print('PORT', os.environ.get('VIVARIUM_PORT'))
try:
    print('RESOLVED', socket.getaddrinfo('deb.debian.org', 443)[0][4])
except socket.gaierror as e:
    print('NO NAME', e)
servers = [l.split()[1] for l in open('/etc/resolv.conf') if l.split()[:1] == ['nameserver']]
print('SERVERS', servers)
q = bytes.fromhex('abcd01000001000000000000') + b'\\x03deb\\x06debian\\x03org\\x00' + bytes.fromhex('00010001')
for ns in servers:
    s = socket.socket(socket.AF_INET6 if ':' in ns else socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    try:
        s.sendto(q, (ns, 53)); s.recv(512); print('ANSWER FROM', ns)
    except OSError as e:
        print('SILENT', ns, type(e).__name__)
listen = [l for f in ('/proc/net/tcp', '/proc/net/tcp6') if os.path.exists(f)
          for l in open(f).read().splitlines()[1:] if l.split()[3] == '0A']
print('LISTEN', len(listen))
s = socket.socket(); s.settimeout(2)
try:
    s.connect(('127.0.0.1', 8000)); print('8000 OPEN')
except OSError as e:
    print('8000 CLOSED', type(e).__name__)`);
  assert.match(r.text, /NO NAME/, `an outside name resolved in the sandbox: ${r.text}`);
  assert.doesNotMatch(r.text, /ANSWER FROM/, `a resolver answered: ${r.text}`);
  assert.match(r.text, /PORT off/);
  assert.match(r.text, /LISTEN 0\b/, `something listens on TCP: ${r.text}`);
  assert.match(r.text, /8000 CLOSED/);
  assert.equal(vp('network', 'inspect', '-f', '{{.DNSEnabled}} {{.Internal}}', `vivarium-${u}`), 'false true');
  await c.close();
});

test('egress: the proxy sits at a fixed address on each network, kept across restarts, stops and recreation', async () => {
  const port = Number(new URL(sv.base).port);
  const u = user('egr'), moved = user('moved');
  const egress = `vivarium-${TAG}-egress`;
  const labels = (x) => ['--label', 'io.vivarium.managed=true', '--label', `io.vivarium.user=${x}`];
  standInProxy(egress);
  // A network that has the proxy at a low address (connected by hand).
  vp('network', 'create', '--internal', '--disable-dns', ...labels(moved), `vivarium-${moved}`);
  vp('network', 'connect', `vivarium-${moved}`, egress);

  await sv.stop();
  sv = await startSupervisor({ podmanSock, state, port, extra: ['egress:', `  container: ${egress}`, '  port: 3128'].join('\n') });
  const proxyCheck = `import os, urllib.request
print('PROXY', os.environ.get('http_proxy'), os.environ.get('https_proxy'), os.environ.get('HTTPS_PROXY'), repr(os.environ.get('no_proxy')))
print(urllib.request.urlopen('http://deb.debian.org/debian/', timeout=10).read().decode())`;
  const egressIp = (x) => vp('inspect', '-f', `{{(index .NetworkSettings.Networks "vivarium-${x}").IPAddress}}`, egress);
  const check = async (x) => {
    const c = await sv.client(x);
    const r = await runPython(c, proxyCheck);
    await c.close();
    const ip = egressIp(x);
    const subnet = vp('network', 'inspect', '-f', '{{range .Subnets}}{{.Subnet}}{{end}}', `vivarium-${x}`);
    assert.match(subnet, /\.0\/24$/, subnet);
    assert.equal(ip, subnet.replace(/\.0\/24$/, '.254'), `the proxy at the last address of ${subnet}`);
    const url = `http://${ip}:3128`;
    assert.ok(r.text.includes(`PROXY ${url} ${url} ${url} ''`), r.text);
    assert.match(r.text, /stand-in proxy/, `the sandbox did not reach the proxy by address: ${r.text}`);
    assert.equal(vp('network', 'inspect', '-f', '{{.DNSEnabled}}', `vivarium-${x}`), 'false');
    return ip;
  };
  const ipU = await check(u);
  await check(moved);
  assert.match(sv.stderr(), new RegExp(`vivarium-${moved}: moving the egress proxy from \\S+ to its fixed address`));

  // Stable: a restarted supervisor, a stopped sandbox, a recreated one.
  const id = () => objects(u).containers[0].split(' ')[0];
  const id1 = id();
  await sv.stop();
  sv = await startSupervisor({ podmanSock, state, port, extra: ['egress:', `  container: ${egress}`, '  port: 3128'].join('\n') });
  assert.equal(await check(u), ipU);
  vp('stop', '-t', '0', `vivarium-${u}`);
  assert.equal(await check(u), ipU);
  assert.equal(id(), id1, 'a stopped sandbox is started again, not remade');
  vp('rm', '-f', '-t', '0', `vivarium-${u}`);
  assert.equal(await check(u), ipU);
  assert.notEqual(id(), id1);
  vp('rm', '-f', '-t', '0', egress);
});

test('a sandbox that swaps its agent socket for a symlink cannot reach another user', async () => {
  const evil = user('evil'), victim = user('victim');
  const port = Number(new URL(sv.base).port);
  await sv.stop();
  sv = await startSupervisor({ podmanSock, state, port });
  const cv = await sv.client(victim);
  await runPython(cv, "open('secret.txt','w').write('victim-secret')");
  await cv.close();
  const ce = await sv.client(evil);
  // From inside: point /run/vivarium/agent.sock at the victim's socket as
  // the host sees it (the layout is no secret).
  // The run directory is sealed once the agent listens (0750, not the
  // sandbox's): it cannot even remove its own socket.  The rest of the
  // test stays for the day it could.
  const r = await runPython(ce, `import os
try:
    os.remove('/run/vivarium/agent.sock')
    os.symlink(${JSON.stringify(`${state}/users/${victim}/agent.sock`)}, '/run/vivarium/agent.sock')
    print('planted')
except PermissionError as e:
    print('sealed', e)`);
  assert.match(r.text, /sealed .*Permission denied/, r.text);
  await ce.close();
  // A new supervisor has no kept connections: it must open the path again.
  await sv.stop();
  sv = await startSupervisor({ podmanSock, state, port, readyTimeout: '3s' });
  const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: { name: 'run_python', arguments: { code: "import os; print(sorted(os.listdir('.')))" } } });
  const res = await sv.post(ping, { userId: evil });
  assert.doesNotMatch(res.text, /secret\.txt/, 'the evil sandbox reached the victim\'s agent');
  // The victim is unaffected.
  const cv2 = await sv.client(victim);
  assert.match((await runPython(cv2, "print(open('secret.txt').read())")).text, /victim-secret/);
  await cv2.close();
  vp('rm', '-f', '-t', '0', `vivarium-${evil}`);
});

test('an idle sandbox is stopped, and the next call resumes with files and namespace', async () => {
  const u = user('sleepy');
  const port = Number(new URL(sv.base).port);
  await sv.stop();
  sv = await startSupervisor({ podmanSock, state, port, extra: 'idle_stop_after: 3s' });
  let c = await sv.client(u);
  await runPython(c, "x = 41\nopen('nap.txt','w').write('z')");
  // A call in progress counts as activity: a 5 s run outlives the 3 s limit.
  const r0 = await runPython(c, 'import time; time.sleep(5); print("awake")');
  assert.match(r0.text, /awake/);
  assert.equal(containerState(u), 'running');
  const deadline = Date.now() + 20000;
  while (containerState(u) === 'running' && Date.now() < deadline) await sleep(250);
  assert.match(containerState(u) || '', /^(exited|stopped)$/, 'stopped when idle');
  await c.close();
  c = await sv.client(u);
  const r = await runPython(c, "print(x + 1, open('nap.txt').read())");
  assert.match(r.text, /42 z/);
  assert.equal(containerState(u), 'running');
  await c.close();
});
