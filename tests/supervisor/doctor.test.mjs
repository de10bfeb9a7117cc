// vivariumctl doctor (make test-supervisor), with the tests' private Podman
// and the sandbox image: on a healthy service (a supervisor keeping its
// egress proxy, a token file of mode 0600, the image present) nothing
// fails and --fetch gets an origin through the proxy; each broken state it
// checks fails and names the fault and its fix; bad arguments exit 2.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, chmodSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ctlBin } from '../e2e/harness.mjs';
import {
  TAG, IMAGE, TOKEN, vp, vpTry, startPodman, startSupervisor, stateDir, cleanup, imagePresent, makeNetwork,
} from './lib.mjs';

const EG = `vivtest-doctor-${TAG}`;
const ORIGIN = `vivtest-dorigin-${TAG}`;
const ORIGIN_NET = `vivtest-dorigin-${TAG}`;
const podmanSock = `/run/vsv-${TAG}.podman.sock`;
const dir = mkdtempSync('/tmp/vsv-doctor-');
const tokenFile = join(dir, 'token');
let podman, sv, base, originIp, hostGw;

// doctor with the supervisor's config, edited by fn; { code, out }.
function doctor(fn = (c) => c, args = [], env = {}) {
  const conf = join(dir, `ctl-${Math.random().toString(16).slice(2)}.yaml`);
  writeFileSync(conf, fn(base));
  const r = spawnSync(ctlBin, ['-f', conf, 'doctor', ...args],
    { encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: r.status, out: r.stdout + r.stderr };
}
const line = (out, verdict, check) => new RegExp(`^${verdict} +${check} `, 'm').test(out);

before(async () => {
  podman = await startPodman(podmanSock);
  assert.ok(imagePresent(), `${IMAGE} is not in the test storage: run make image-for-tests`);
  makeNetwork(podmanSock, { name: ORIGIN_NET, network_interface: `vdo${TAG.slice(1)}`, driver: 'bridge', internal: false, dns_enabled: false });
  vp('run', '-d', '--name', ORIGIN, '--network', ORIGIN_NET, '--image-volume', 'ignore', '--read-only',
    '--entrypoint', 'sh', IMAGE, '-c',
    `mkdir -p /tmp/www && echo hi >/tmp/www/hello.txt && exec python3 -m http.server --bind 0.0.0.0 --directory /tmp/www 8000`);
  originIp = vp('inspect', '--format', `{{(index .NetworkSettings.Networks "${ORIGIN_NET}").IPAddress}}`, ORIGIN);
  const subnet = vp('network', 'inspect', '--format', '{{range .Subnets}}{{.Subnet}}{{end}}', ORIGIN_NET);
  hostGw = execFileSync('sh', ['-c', `ip -o -4 addr show dev vdo${TAG.slice(1)} | awk '{ sub("/.*", "", $4); print $4; exit }'`],
    { encoding: 'utf8' }).trim();
  writeFileSync(join(dir, 'egress.yaml'), `allow_ports: [80, 443, 8000]\nallow_cidrs: [${subnet}]\n`);
  writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
  sv = await startSupervisor({
    podmanSock, state: stateDir(),
    extra: `egress:\n  manage: yes\n  container: ${EG}\n  network: ${EG}\n  bridge: vdx${TAG.slice(1)}\n  config: ${join(dir, 'egress.yaml')}`,
  });
  base = readFileSync(sv.conf, 'utf8').replace(/^token: .*$/m, `token_file: ${tokenFile}`);
});

after(async () => {
  if (sv) await sv.stop();
  cleanup();
  for (const c of [EG, ORIGIN]) vpTry('rm', '-f', '-t', '0', c);
  for (const n of [EG, ORIGIN_NET]) vpTry('network', 'rm', '-f', n);
  rmSync(dir, { recursive: true, force: true });
  if (podman) await podman.stop();
});

test('a healthy service: nothing fails, and --fetch goes through the proxy', () => {
  const r = doctor((c) => c, ['--fetch', `http://${originIp}:8000/hello.txt`]);
  assert.equal(r.code, 0, r.out);
  assert.doesNotMatch(r.out, /^FAIL/m, r.out);
  for (const c of ['config', 'token', 'podman', 'image', 'egress', 'fetch', 'links'])
    assert.ok(line(r.out, 'ok', c), `no ok for ${c}:\n${r.out}`);
  assert.match(r.out, /fetch +http:\/\/.*HTTP 200/);
  assert.match(r.out, /^info +librechat .*X-User-ID/m);
  const j = JSON.parse(doctor((c) => c, ['--json']).out);
  assert.ok(Array.isArray(j) && j.some((x) => x.check === 'egress' && x.verdict === 'ok'), JSON.stringify(j));
});

test('each broken state fails and names its fault', async () => {
  let r = doctor((c) => c, ['--fetch', `http://${hostGw}:8000/hello.txt`]);
  assert.equal(r.code, 1, r.out);
  assert.ok(line(r.out, 'FAIL', 'fetch'), r.out);
  assert.match(r.out, /HTTP 403/);

  chmodSync(tokenFile, 0o644);
  r = doctor();
  chmodSync(tokenFile, 0o600);
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, new RegExp(`^FAIL +token +${tokenFile} is mode 0644`, 'm'));
  assert.match(r.out, new RegExp(`fix: chmod 600 ${tokenFile}`));

  r = doctor((c) => c.replace(/^image: .*$/m, `image: localhost/vivtest-no-image:${TAG}`));
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /^FAIL +image .*vivtest-no-image/m);
  assert.match(r.out, /fix: build it: make image/);

  r = doctor((c) => c.replace(/^listen: .*$/m, 'listen: 0.0.0.0:8787'));
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /^FAIL +links +file links point at http:\/\/127\.0\.0\.1:8787/m);

  r = doctor((c) => c.replace(/^egress:[\s\S]*$/m, ''));
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /^FAIL +egress +no egress proxy is configured/m);

  await sv.stop();
  sv = null;
  vp('stop', '-t', '0', EG);
  r = doctor();
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, new RegExp(`^FAIL +egress +the proxy container ${EG} is (exited|stopped)`, 'm'));

  r = doctor((c) => c.replace(/^  socket: .*$/m, '  socket: /nonexistent/podman.sock'));
  assert.equal(r.code, 1, r.out);
  assert.match(r.out, /^FAIL +podman +Podman is not reachable at \/nonexistent\/podman.sock/m);
  assert.match(r.out, /fix: start Podman's API service/);
});

test('bad arguments exit 2 with a clear word', () => {
  let r = doctor((c) => c, ['--fetch', 'ftp://example.org/']);
  assert.equal(r.code, 2, r.out);
  assert.match(r.out, /expected an http:\/\/ or https:\/\/ URL/);
  r = doctor((c) => c, ['extra']);
  assert.equal(r.code, 2, r.out);
});
