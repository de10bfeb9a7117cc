// The supervisor's sandboxes under gVisor (make test-gvisor): a private
// Podman service whose runtime is deploy/vivarium-runsc, the supervisor
// with sandbox.runtime: runsc, and a few of tests/supervisor's checks that
// depend on what the runtime does: the agent's unix socket reached from the
// host, the namespace kept, a chart, egress by address, and two users'
// networks apart.  Plus the refusal when the service runs something else.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { repoRoot, runPython } from '../e2e/harness.mjs';
import {
  TAG, IMAGE, user, vp, vpTry, startPodman, stateDir, startSupervisor,
  cleanup, imagePresent, assertIsolated, standInProxy,
} from '../supervisor/lib.mjs';

// startPodman's shell reads VP_RUNTIME (tests/lib/podman.sh).
const RUNSC = join(repoRoot, 'deploy/vivarium-runsc');
process.env.VP_RUNTIME = RUNSC;
const podmanSock = `/run/vsv-${TAG}.podman.sock`;
const egress = `vivarium-${TAG}-egress`;
const EXTRA = ['sandbox:', '  runtime: runsc', '  uid_base: 0', 'egress:', `  container: ${egress}`, '  port: 3128'].join('\n');
let podman, sv, state;

before(async () => {
  podman = await startPodman(podmanSock);
  assert.ok(imagePresent(), `${IMAGE} is not in the test storage: run make image-for-tests`);
  state = stateDir();
  standInProxy(egress);	// itself under gVisor
  sv = await startSupervisor({ podmanSock, state, extra: EXTRA });
});

after(async () => {
  if (sv) await sv.stop();
  cleanup();
  if (podman) await podman.stop();
});

test('a call runs under gVisor: its kernel, its runtime, the agent socket reached from the host', async () => {
  const u = user('one');
  const c = await sv.client(u);
  const r = await runPython(c, "import platform, os; print('KERNEL', platform.release()); print(sorted(os.listdir('/run/vivarium')))");
  await c.close();
  // gVisor's Sentry says it is Linux 4.4.0; the host's kernel is newer.
  assert.match(r.text, /KERNEL 4\.4\.0\b/, r.text);
  assert.match(r.text, /\['agent\.sock'\]/, r.text);
  assert.equal(vp('inspect', '-f', '{{.OCIRuntime}}', `vivarium-${u}`), RUNSC);
});

// A sandbox's own log, for a failure's message.
const logs = (u) => vpTry('logs', '--tail', '30', `vivarium-${u}`) || '(no log)';

test('the namespace carries over between calls', async () => {
  const u = user('calls');
  const c = await sv.client(u);
  let r;
  try {
    r = await runPython(c, 'x = 41');
    r = await runPython(c, 'print(x + 1)');
  } catch (e) {
    throw new Error(`${e.message}\nits log:\n${logs(u)}`);
  }
  assert.match(r.text, /^42$/m, r.text);
  await c.close();
});

// With the bare pids limit (128) the Sentry could not make a thread
// during this import and the whole sandbox died (backend_podman_spec.c, pids_limit).
test('a chart comes back', async () => {
  const u = user('chart');
  const c = await sv.client(u);
  let r;
  try {
    r = await runPython(c, `import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
plt.plot([1, 2, 3], [1, 4, 9]); plt.savefig('chart.png'); print('saved')`);
  } catch (e) {
    throw new Error(`${e.message}\nits log:\n${logs(u)}`);
  }
  const img = r.content.find((x) => x.type === 'image');
  assert.ok(img, `no image in ${JSON.stringify(r.content).slice(0, 500)}`);
  assert.equal(img.mimeType, 'image/png');
  assert.equal(Buffer.from(img.data, 'base64').subarray(1, 4).toString(), 'PNG');
  assert.match(r.text, /chart\.png/);
  await c.close();
});

test('egress reaches the proxy by address; another user\'s sandbox is out of reach', async () => {
  const a = user('ea'), b = user('eb');
  const ca = await sv.client(a), cb = await sv.client(b);
  const r = await runPython(ca, `import urllib.request
print(urllib.request.urlopen('http://deb.debian.org/debian/', timeout=10).read().decode())`);
  assert.match(r.text, /stand-in proxy/, r.text);
  const ip = (x) => vp('inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', `vivarium-${x}`);
  await assertIsolated(ca, cb, ip(a), ip(b));
  await ca.close(); await cb.close();
});

test('sandbox.runtime: runsc refuses a Podman service that runs another runtime', async () => {
  const sock = `/run/vsv-${TAG}.runc.sock`;
  const saved = process.env.VP_RUNTIME;
  process.env.VP_RUNTIME = 'runc';
  const p2 = await startPodman(sock);
  process.env.VP_RUNTIME = saved;
  try {
    await assert.rejects(startSupervisor({ podmanSock: sock, state, extra: 'sandbox:\n  runtime: runsc\n  uid_base: 0' }),
      /sandbox\.runtime is runsc but the Podman service .* runs \S*\/runc: start it with --runtime/);
    await assert.rejects(startSupervisor({ podmanSock: sock, state, extra: 'sandbox:\n  runtime: kata' }),
      /runtime.*runc or runsc/);
    // A Podman user namespace per sandbox and runsc 20221219 do not mix.
    await assert.rejects(startSupervisor({ podmanSock: podmanSock, state, extra: 'sandbox:\n  runtime: runsc' }),
      /runtime: runsc needs uid_base: 0/);
  } finally {
    await p2.stop();
  }
});
