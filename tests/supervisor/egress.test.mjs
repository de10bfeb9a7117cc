// The egress proxy kept by the supervisor (egress: manage: yes; make
// test-supervisor), with the tests' private Podman and the sandbox image:
// the supervisor makes the proxy's network, this host's address list and
// the container; a sandbox reaches an origin (a web server in a container
// this test starts, its subnet allowed) through the proxy and not directly;
// the host's own address is refused though allow_cidrs holds it; the
// proxy's log lines name the user (user-labels, with the name LibreChat
// sent) and vivariumctl logs still finds them; a proxy that stopped is
// started again, one whose config changed is replaced and
// put back on the users' networks; a config the proxy refuses is said with
// the proxy's words and not retried in a loop.  Every target is a container
// of this test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { runPython, sleep, until, ctlBin } from '../e2e/harness.mjs';
import {
  TAG, IMAGE, user, vp, vpTry, startPodman, startSupervisor, stateDir, cleanup, imagePresent, makeNetwork,
} from './lib.mjs';

const uid = user('egress');
const EG = `vivtest-egress-${TAG}`;
const EG_NET = `vivtest-egress-${TAG}`;
const ORIGIN = `vivtest-origin-${TAG}`;
const ORIGIN_NET = `vivtest-origin-${TAG}`;
const podmanSock = `/run/vsv-${TAG}.podman.sock`;
const dir = mkdtempSync('/tmp/vsv-egress-');
const egressConf = join(dir, 'egress.yaml');
let podman, sv, state, originIp, originSubnet, hostGw;

function net(name, bridge) {
  makeNetwork(podmanSock, { name, network_interface: bridge, driver: 'bridge', internal: false, dns_enabled: false });
}

const egState = () => vpTry('inspect', '--format', '{{.State.Status}}', EG) || 'missing';
const egId = () => vpTry('inspect', '--format', '{{.Id}}', EG) || 'none';

// The core's until, every 250 ms, for 20 s unless told.
const waitFor = (what, fn, ms = 20000) => until(fn, { what, ms, step: 250 });

// What a sandbox gets for each target: "200 body", "403 ...", or "error X".
const probe = (targets) => `import socket, urllib.request, urllib.error
def get(url):
    try:
        with urllib.request.urlopen(url, timeout=8) as f:
            return f"{f.status} {f.read().decode().strip()}"
    except urllib.error.HTTPError as e:
        return f"{e.code} {e.read().decode(errors='replace').strip()[:200]}"
    except Exception as e:
        return f"error {type(e).__name__}"
${Object.entries(targets).map(([k, url]) => `print(${JSON.stringify(k)}, get(${JSON.stringify(url)}))`).join('\n')}
s = socket.socket(); s.settimeout(3)
try:
    s.connect((${JSON.stringify(originIp)}, 8000)); print('direct connected')
except Exception as e:
    print('direct error', type(e).__name__)`;

const line = (text, key) => (new RegExp(`^${key} (.*)$`, 'm').exec(text) || [])[1];

before(async () => {
  podman = await startPodman(podmanSock);
  assert.ok(imagePresent(), `${IMAGE} is not in the test storage: run make image-for-tests`);
  net(ORIGIN_NET, `vto${TAG.slice(1)}`);
  vp('run', '-d', '--name', ORIGIN, '--network', ORIGIN_NET, '--image-volume', 'ignore',
    '--cap-drop', 'ALL', '--read-only', '--entrypoint', 'sh', IMAGE, '-c',
    `mkdir -p /tmp/www && echo hello-${TAG} >/tmp/www/hello.txt && exec python3 -m http.server --bind 0.0.0.0 --directory /tmp/www 8000`);
  originIp = vp('inspect', '--format', `{{(index .NetworkSettings.Networks "${ORIGIN_NET}").IPAddress}}`, ORIGIN);
  originSubnet = vp('network', 'inspect', '--format', '{{range .Subnets}}{{.Subnet}}{{end}}', ORIGIN_NET);
  hostGw = execFileSync('sh', ['-c', `ip -o -4 addr show dev vto${TAG.slice(1)} | awk '{ sub("/.*", "", $4); print $4; exit }'`],
    { encoding: 'utf8' }).trim();
  writeFileSync(egressConf, `allow_ports: [80, 443, 8000]\nallow_cidrs: [${originSubnet}]\nverbose: yes\n`);
  state = stateDir();
  sv = await startSupervisor({
    podmanSock, state,
    extra: [
      'idle_stop_after: 30s',
      `egress:\n  manage: yes\n  container: ${EG}\n  network: ${EG_NET}\n  bridge: vte${TAG.slice(1)}\n  config: ${egressConf}`,
    ].join('\n'),
  });
});

after(async () => {
  if (sv) await sv.stop();
  cleanup();
  vpTry('rm', '-f', '-t', '0', EG);
  vpTry('rm', '-f', '-t', '0', ORIGIN);
  vpTry('network', 'rm', '-f', EG_NET);
  vpTry('network', 'rm', '-f', ORIGIN_NET);
  rmSync(dir, { recursive: true, force: true });
  if (podman) await podman.stop();
});

test('the supervisor makes the proxy, hardened, with the host address list', () => {
  assert.equal(egState(), 'running', sv.stderr());
  assert.match(sv.stderr(), new RegExp(`egress proxy ${EG} runs`));
  const ins = JSON.parse(vp('inspect', EG))[0];
  assert.equal(ins.Config.Labels['io.vivarium.role'], 'egress');
  assert.equal(ins.Config.User, '1000:1000');
  assert.equal(ins.HostConfig.ReadonlyRootfs, true);
  assert.deepEqual(ins.EffectiveCaps ?? [], []);
  assert.equal(ins.HostConfig.RestartPolicy.Name, '', 'a restart policy would loop a proxy that cannot start');
  const list = readFileSync(join(state, 'egress', 'host-addresses'), 'utf8');
  assert.match(list, /^127\.0\.0\.1$/m);
  assert.ok(list.includes(`${hostGw}\n`), `the origin network's host address ${hostGw} is not listed:\n${list}`);
  assert.equal(vp('network', 'inspect', '--format', '{{.Internal}}', EG_NET), 'false');
});

test('a sandbox reaches the allowed origin only through the proxy; the host is refused', async () => {
  const c = await sv.client(uid);
  const r = await runPython(c, probe({ get: `http://${originIp}:8000/hello.txt`, hostgw: `http://${hostGw}:8000/hello.txt` }));
  assert.equal(line(r.text, 'get'), `200 hello-${TAG}`, r.text);
  assert.match(line(r.text, 'direct'), /^error/, r.text);
  assert.match(line(r.text, 'hostgw'), /^403 /, `the host's own address inside allow_cidrs was not refused: ${r.text}`);
  await c.close();
});

test('the proxy\'s log lines name the user whose sandbox fetched', async () => {
  const labels = () => { try { return readFileSync(join(state, 'egress', 'user-labels'), 'utf8'); } catch { return ''; } };
  const ip = vp('inspect', '--format', `{{(index .NetworkSettings.Networks "vivarium-${uid}").IPAddress}}`, `vivarium-${uid}`);
  assert.match(ip, /^\d+\.\d+\.\d+\.\d+$/);
  // Started before any name came: its line names the id alone.
  assert.ok(labels().includes(`\n${ip} ${uid}\n`), labels());
  // The name LibreChat sends is written at the reaper's next look.
  const c = await sv.client(uid, { headers: { 'X-User-Name': `Eve "E." ${TAG}@example.org` } });
  await runPython(c, 'pass');
  const want = `${ip} Eve_E._${TAG}@example.org/${uid}`;
  await waitFor('the name in user-labels', () => labels().includes(`\n${want}\n`));
  assert.equal(vp('exec', EG, 'cat', '/run/vivarium-host/user-labels'), labels().trim());
  await sleep(1500); // the proxy looks at the file once a second
  const r = await runPython(c, probe({ get: `http://${originIp}:8000/hello.txt` }));
  assert.equal(line(r.text, 'get'), `200 hello-${TAG}`, r.text);
  await c.close();
  const tag = `user=Eve_E._${TAG}@example.org/${uid} target=${originIp}:8000 `;
  // The proxy's lines as vivariumctl logs finds them: by client=ADDRESS:,
  // which still comes first.
  const ctlLogs = () => spawnSync(ctlBin, ['-f', sv.conf, 'logs', uid], { encoding: 'utf8' });
  let last = '';
  const got = await waitFor('the labelled line in the proxy\'s log', () => {
    const r = ctlLogs();
    last = r.stdout + r.stderr;
    return r.status === 0 && r.stdout.split('\n').find((l) => l.startsWith('egress') && l.includes(tag));
  }).catch((e) => { throw new Error(`${e.message} (${tag}):\n${last.slice(-3000)}`); });
  assert.match(got, new RegExp(`client=${ip.replace(/\./g, '\\.')}:\\d+ ${tag}`));
});

test('a stopped proxy is started again; an edited config replaces it, back on the users\' networks', async () => {
  vp('stop', '-t', '0', EG);
  await waitFor('the proxy to run again', () => egState() === 'running');
  const before = egId();
  writeFileSync(egressConf, readFileSync(egressConf, 'utf8') + '# edited\n');
  await waitFor('the proxy to be replaced', () => egId() !== before && egState() === 'running');
  // The new proxy is at the old one's address with another MAC: the
  // sandbox's neighbour entry may take a few seconds to learn it.
  const c = await sv.client(uid);
  let r;
  for (let i = 0; i < 4; i++) {
    r = await runPython(c, probe({ get: `http://${originIp}:8000/hello.txt` }));
    if (line(r.text, 'get') === `200 hello-${TAG}`) break;
    await sleep(2000);
  }
  assert.equal(line(r.text, 'get'), `200 hello-${TAG}`, `the new proxy is not on the user's network: ${r.text}\n${sv.stderr().slice(-3000)}`);
  await c.close();
});

test('a config the proxy refuses is said with its words, and not retried in a loop', async () => {
  writeFileSync(egressConf, 'allow_ports: [nonsense]\n');
  await waitFor('the refusal in the log', () => /exited at start \(code \d+\): .*allow_ports/s.test(sv.stderr()), 30000);
  const exited = egState();
  assert.notEqual(exited, 'running');
  // A start that failed is said once; the looks after it say when the
  // next try is ("tried again in N s").
  const starts = () => sv.stderr().split('\n').filter((l) => /exited at start/.test(l) && !/tried again in/.test(l)).length;
  const n = starts();
  await sleep(8000); // more than two reaper ticks (3 s)
  assert.ok(starts() <= n, `started again at once: ${starts()} starts after ${n}\n${sv.stderr().slice(-3000)}`);
  assert.match(sv.stderr(), /tried again in \d+ s/);
  // Fixed: replaced at the next look.
  writeFileSync(egressConf, `allow_ports: [80, 443, 8000]\nallow_cidrs: [${originSubnet}]\n`);
  await waitFor('the proxy to run again', () => egState() === 'running');
});
