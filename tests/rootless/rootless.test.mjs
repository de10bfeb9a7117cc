// The supervisor as an ordinary user against that user's rootless Podman,
// driven by the official MCP SDK client.  Run by tests/rootless/run.sh
// (make test-rootless) as the user it makes, with that user's Podman
// service on VIVARIUM_PODMAN_SOCKET, the sandbox image in its storage, the
// egress proxy the supervisor makes as VRL_EGRESS (settings VRL_EGRESS_CONFIG),
// an origin web server at VRL_ORIGIN
// (host:port, a private address the proxy was told to allow).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, statSync, mkdirSync } from 'node:fs';
import { runPython, ctlBin } from '../e2e/harness.mjs';
import { user, startSupervisor, assertIsolated } from '../supervisor/lib.mjs';

const sock = process.env.VIVARIUM_PODMAN_SOCKET;
const origin = process.env.VRL_ORIGIN;
const egress = process.env.VRL_EGRESS;
const state = `${process.env.XDG_RUNTIME_DIR}/vivarium`;
const uid = process.getuid();
// This user's subordinate uids (run.sh's useradd gave it a range).
const [subuid, subcount] = readFileSync('/etc/subuid', 'utf8').split('\n')
  .map((l) => l.split(':')).filter((f) => f[0] === process.env.USER)
  .map((f) => [Number(f[1]), Number(f[2])])[0];
let sv;

// The user's own Podman, through the socket the supervisor uses.
const P = (...args) => execFileSync('podman', ['--remote', '--url', `unix://${sock}`, ...args],
  { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
const info = JSON.parse(P('info', '--format', 'json'));
// A container's log: the proxy writes to stderr, which `podman logs` keeps.
const logs = (name) => {
  const r = spawnSync('podman', ['--remote', '--url', `unix://${sock}`, 'logs', name], { encoding: 'utf8' });
  return r.stdout + r.stderr;
};

before(async () => {
  assert.ok(sock && origin && egress, 'run by tests/rootless/run.sh');
  mkdirSync(state, { recursive: true, mode: 0o700 });
  // The first container pays for the copy of the image's layers that
  // the subordinate uid mapping needs (about 10 s here).
  sv = await startSupervisor({ podmanSock: sock, state, readyTimeout: '120s',
    extra: ['egress:', '  manage: yes', `  container: ${egress}`, '  port: 3128',
      `  config: ${process.env.VRL_EGRESS_CONFIG}`].join('\n') });
});

after(async () => {
  if (sv) await sv.stop();
});

test('an ordinary user runs the supervisor against its rootless Podman', () => {
  assert.notEqual(uid, 0, 'the client runs as the test user');
  assert.equal(info.host.security.rootless, true, 'Podman is rootless');
  const st = readFileSync(`/proc/${sv.proc.pid}/status`, 'utf8');
  assert.match(st, new RegExp(`^Uid:\\s+${uid}\\s+${uid}\\s`, 'm'), 'the supervisor runs as the user');
  assert.match(sv.stderr(), new RegExp(`Podman 4\\.\\d+\\.\\d+ at ${sock}`));
  // What an escape lands as, said at start: a subordinate id, not us.
  assert.match(sv.stderr(), new RegExp(`WARNING: every sandbox runs as the same host uid ${subuid + 1000} ` +
    `\\(sandbox user 1000:1000, one of this user's subordinate ids, not the supervisor's\\)`), sv.stderr());
});

test('two users: own containers, networks and workspaces; they cannot reach each other', async () => {
  const a = user('alice'), b = user('bob');
  const ca = await sv.client(a);
  const cb = await sv.client(b, { viaPath: true });
  let r = await runPython(ca, "open('mine.txt','w').write('alice'); import os; print('A', os.getuid(), sorted(os.listdir('.')))");
  assert.match(r.text, /A 1000 \['mine\.txt'\]/, r.text);
  r = await runPython(cb, "import os; print('B', sorted(os.listdir('.')), os.path.exists('/workspace/mine.txt'))");
  assert.match(r.text, /B \[\] False/, `bob sees alice's files: ${r.text}`);
  r = await runPython(ca, "print(open('mine.txt').read())");
  assert.match(r.text, /alice/, 'alice keeps her file');

  for (const u of [a, b]) {
    const name = `vivarium-${u}`;
    assert.equal(P('inspect', '-f', '{{.State.Status}}', name), 'running');
    assert.equal(P('network', 'inspect', '-f', '{{.Internal}} {{.DNSEnabled}}', name), 'true false');
    assert.equal(P('volume', 'exists', `${name}-workspace`), '');
    assert.equal(P('inspect', '-f', '{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}', name).trim(), name);
    // The sandbox user (1000) is one of this user's subordinate ids, not
    // the supervisor's uid: the run directory stays ours, given to it by
    // an ACL; the agent's socket is its own, 0660 for our ACL entry.
    const d = statSync(`${state}/users/${u}`), s = statSync(`${state}/users/${u}/agent.sock`);
    assert.equal(d.uid, uid); assert.equal(d.mode & 0o707, 0o700);
    assert.ok(s.isSocket()); assert.equal(s.uid, subuid + 1000, 'the agent is subordinate id 1000');
    assert.notEqual(s.uid, uid); assert.equal(s.mode & 0o777, 0o660);
    // On the host, no process of the container is the supervisor's uid.
    const pid1 = P('inspect', '-f', '{{.State.Pid}}', name);
    const kids = readFileSync(`/proc/${pid1}/task/${pid1}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    assert.ok(kids.length > 0, 'the agent runs under the container\'s init');
    for (const p of [pid1, ...kids]) {
      const st = readFileSync(`/proc/${p}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)[1];
      assert.notEqual(Number(st), uid, `container process ${p} runs as the supervisor's uid`);
      assert.ok(Number(st) >= subuid && Number(st) < subuid + subcount, `process ${p}: uid ${st}`);
    }
  }
  r = await runPython(ca, "print('MAP', ' '.join(open('/proc/self/uid_map').read().split()))");
  assert.match(r.text, /MAP 0 1 65536$/m, `uid map: ${r.text}`);

  // As in the rootful suite, with a shorter wait.
  const ip = (u) => P('inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', `vivarium-${u}`);
  await assertIsolated(ca, cb, ip(a), ip(b), 5);
  await ca.close(); await cb.close();
});

test('the link key is in no environment and no file a run can read; links still work', async () => {
  const c = await sv.client(user('alice'));
  // Every process of the sandbox: PID 1 (Podman's init), the agent and
  // the run itself.  The agent is not dumpable: its environ is closed.
  const r = await runPython(c, `import os, re
for p in sorted(os.listdir('/proc'), key=lambda x: (len(x), x)):
    if not p.isdigit(): continue
    try:
        e = open('/proc/%s/environ' % p, 'rb').read()
    except OSError as x:
        print('CLOSED', p, type(x).__name__); continue
    names = [v.split(b'=')[0].decode() for v in e.split(b'\\0') if v.startswith(b'VIVARIUM_LINK')]
    print('PROC', p, ','.join(names), 'HEX' if re.search(rb'[0-9a-f]{64}', e) else 'clean')
print('FILE', os.path.exists('/run/vivarium/link.key'), sorted(os.listdir('/run/vivarium')))
try:
    open('/run/vivarium/planted', 'w'); print('PLANTED')
except OSError as x:
    print('SEALED', type(x).__name__)
open('report.txt', 'w').write('linked-rootless')`);
  assert.doesNotMatch(r.text, /VIVARIUM_LINK_KEY(,|\s|$)/m, `a key in an environment: ${r.text}`);
  assert.doesNotMatch(r.text, /PROC \d+ .* HEX/, `a key in an environment: ${r.text}`);
  assert.match(r.text, /PROC 1 /, r.text);
  assert.match(r.text, /CLOSED \d+ PermissionError/, `the agent's environ is readable: ${r.text}`);
  assert.match(r.text, /FILE False \['agent\.sock'\]/, r.text);
  // Once the agent listens, its run directory takes no new entries.
  assert.match(r.text, /SEALED PermissionError/, r.text);
  // The agent read the key from the file: its links open.
  const l = await c.callTool({ name: 'share_file', arguments: { path: 'report.txt' } });
  assert.ok(!l.isError && l.structuredContent?.url, JSON.stringify(l));
  const res = await fetch(l.structuredContent.url);
  assert.equal(res.status, 200, l.structuredContent.url);
  assert.equal(await res.text(), 'linked-rootless');
  await c.close();
});

test('egress: the sandbox reaches the web through the real proxy, and nothing directly', async (t) => {
  const u = user('alice');
  const c = await sv.client(u);
  const [host, port] = origin.split(':');
  const r = await runPython(c, `import os, socket, urllib.request
print('PROXY', os.environ.get('http_proxy'))
try:
    print('VIA', urllib.request.urlopen('http://${origin}/hello.txt', timeout=10).read().decode().strip())
except urllib.error.HTTPError as e:
    print('REFUSED', e.code, e.read().decode(errors='replace'))
s = socket.socket(); s.settimeout(3)
try:
    s.connect((${JSON.stringify(host)}, ${port})); print('DIRECT CONNECTED')
except Exception as e:
    print('DIRECT BLOCKED', type(e).__name__)
if ${process.env.VRL_INTERNET === '1' ? 'True' : 'False'}:
    print('NET', urllib.request.urlopen('http://deb.debian.org/debian/', timeout=20).status)`);
  await c.close();
  const net = `vivarium-${u}`;
  const sub = P('network', 'inspect', '-f', '{{range .Subnets}}{{.Subnet}}{{end}}', net);
  const ip = P('inspect', '-f', `{{(index .NetworkSettings.Networks "${net}").IPAddress}}`, egress);
  assert.equal(ip, sub.replace(/\.0\/24$/, '.254'), 'the proxy at the last address of the user network');
  assert.ok(r.text.includes(`PROXY http://${ip}:3128`), r.text);
  assert.match(r.text, /VIA hello-rootless/, `the sandbox did not reach the origin through the proxy: ${r.text}\nproxy log:\n${logs(egress)}`);
  assert.match(r.text, /DIRECT BLOCKED/, `the sandbox reached the origin without the proxy: ${r.text}`);
  if (process.env.VRL_INTERNET === '1')
    assert.match(r.text, /NET 200/, `the host reaches deb.debian.org, the sandbox did not: ${r.text}`);
  else
    t.diagnostic('this host does not reach deb.debian.org: internet fetch not tried');
  assert.match(logs(egress), new RegExp(`target=${host}:${port} .*verdict=allow`));
});

test('limits Podman cannot enforce are said loudly, at start and in vivariumctl status', () => {
  const v1 = info.host.cgroupVersion === 'v1';
  const ctl = (...a) => {
    try {
      return execFileSync(ctlBin, ['-f', sv.conf, ...a], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      return `exit ${e.status}: ${e.stdout}${e.stderr}`;
    }
  };
  // alice's sandbox runs (made by the tests above).
  const status = ctl('status', user('alice'));
  const json = ctl('--json', 'status', user('alice'));
  assert.match(json, /"state": *"running"/, json);
  assert.match(json, /"agent_answers": *true/, json);
  if (v1) {
    assert.match(sv.stderr(), /WARNING: sandbox limits are NOT enforced: Podman is rootless on a cgroup v1 host/);
    assert.match(status, /limits are NOT enforced: Podman is rootless on a cgroup v1 host/);
    assert.match(json, /"limits_enforced": *false/);
  } else {
    // cgroup v2: enforced exactly when the controllers are delegated.
    const ctls = info.host.cgroupControllers || [];
    const all = ['memory', 'cpu', 'pids'].every((c) => ctls.includes(c));
    assert.equal(/NOT enforced/.test(sv.stderr()), !all, sv.stderr());
    assert.match(json, new RegExp(`"limits_enforced": *${all}`));
  }
});
