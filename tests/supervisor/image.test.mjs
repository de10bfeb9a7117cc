// Sandboxes follow the image (make test-supervisor): when the image the
// config names is rebuilt, a stopped sandbox is made again from the new one
// at its next start, with its files and namespace; a running one keeps its
// image until it stops (no call is cut); the old image, named by nothing
// and used by no sandbox any more, is removed.  vivariumctl upgrade moves
// an idle sandbox now and leaves a busy one alone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runPython, ctlBin } from '../e2e/harness.mjs';
import {
  TAG, IMAGE, user, vp, vpTry, startPodman, startSupervisor, stateDir, cleanup, imagePresent,
} from './lib.mjs';

// The supervisor and vivariumctl must take the image from the config (ref),
// not from the environment, which would name the image under IMAGE.
delete process.env.VIVARIUM_SANDBOX_IMAGE;

const uid = user('image');
const ref = `localhost/vivarium-test-follow:${TAG}`;
const podmanSock = `/run/vsv-${TAG}.podman.sock`;
let podman, sv;
const made = [];

// A new image from the sandbox image: the same files, another id (a
// label), tagged ref; returns its id.
function rebuild(n) {
  const dir = mkdtempSync('/tmp/vsv-img-');
  try {
    writeFileSync(join(dir, 'Containerfile'), `FROM ${IMAGE}\nLABEL io.vivarium.test-follow="${TAG}-${n}"\n`);
    vp('build', '-q', '-t', ref, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const id = vp('image', 'inspect', '--format', '{{.Id}}', ref);
  made.push(id);
  return id;
}

const imageOf = () => vp('inspect', '--format', '{{.Image}}', `vivarium-${uid}`);
const stateOf = () => vp('inspect', '--format', '{{.State.Status}}', `vivarium-${uid}`);
function upgrade(...args) {
  const r = spawnSync(ctlBin, ['-f', sv.conf, 'upgrade', ...args], { encoding: 'utf8' });
  return { status: r.status, out: r.stdout + r.stderr };
}

before(async () => {
  podman = await startPodman(podmanSock);
  assert.ok(imagePresent(), `${IMAGE} is not in the test storage: run make image-for-tests`);
});

after(async () => {
  if (sv) await sv.stop();
  cleanup();
  for (const id of made) vpTry('rmi', '-f', id);
  if (podman) await podman.stop();
});

test('a rebuilt image reaches a sandbox at its next start, never in a call', async () => {
  const first = rebuild(1);
  sv = await startSupervisor({ podmanSock, state: stateDir(), image: ref });
  const c = await sv.client(uid);
  let r = await runPython(c, `x = 41\nopen('/workspace/keep.txt', 'w').write('kept')\nprint('set')`);
  assert.match(r.text, /set/, r.text);
  assert.equal(imageOf(), first);

  // A call runs while the image is rebuilt: it finishes, on the old image.
  const long = runPython(c, `import time\ntime.sleep(4)\nprint('done', x)`);
  await new Promise((res) => setTimeout(res, 1000));
  const second = rebuild(2);
  assert.notEqual(second, first);
  r = await long;
  assert.match(r.text, /done 41/, `the call in flight was cut: ${r.text}`);
  assert.ok(!r.isError, r.text);
  // Running: it keeps its image until it stops.
  r = await runPython(c, 'print(x + 1)');
  assert.match(r.text, /42/, r.text);
  assert.equal(imageOf(), first, 'a running sandbox was made again');

  execFileSync(ctlBin, ['-f', sv.conf, 'stop', uid], { encoding: 'utf8' });
  r = await runPython(c, `print(x, open('/workspace/keep.txt').read())`);
  assert.match(r.text, /41 kept/, `files or namespace lost: ${r.text}`);
  assert.equal(imageOf(), second, 'the stopped sandbox was not made again from the new image');
  // The first image lost its name to the rebuild and its last sandbox.
  assert.equal(vpTry('image', 'exists', first), null, 'the unused, unnamed old image was kept');
  assert.match(sv.stderr(), /the image changed/);
  await c.close();
});

test('vivariumctl upgrade: an idle sandbox now, a busy one never', async () => {
  assert.ok(sv, 'the first test did not start the supervisor');
  const before = imageOf();
  const third = rebuild(3);
  const c = await sv.client(uid);
  let r = await runPython(c, 'y = 7\nprint("ok")');
  assert.match(r.text, /ok/, r.text);

  // A call in flight: the sandbox is busy and is left as it is.
  const long = runPython(c, `import time\ntime.sleep(4)\nprint('slept', y)`);
  await new Promise((res) => setTimeout(res, 1500));
  let u = upgrade(uid);
  assert.equal(u.status, 0, u.out);
  assert.match(u.out, /left as it is \(busy: \d+ requests? and 1 run in progress\)/, u.out);
  assert.equal(imageOf(), before, 'a busy sandbox was made again');
  r = await long;
  assert.match(r.text, /slept 7/, `the call in flight was cut: ${r.text}`);

  // Idle now: made again from the current image, running, nothing lost.
  u = upgrade('--all');
  assert.equal(u.status, 0, u.out);
  assert.match(u.out, /made again from the current image, files and namespace kept; running again/, u.out);
  assert.equal(imageOf(), third);
  assert.equal(stateOf(), 'running');
  r = await runPython(c, `print(x, y, open('/workspace/keep.txt').read())`);
  assert.match(r.text, /41 7 kept/, `files or namespace lost: ${r.text}`);
  assert.ok(!r.isError, r.text);

  // Stopped: made again, and stopped again.
  execFileSync(ctlBin, ['-f', sv.conf, 'stop', uid], { encoding: 'utf8' });
  const fourth = rebuild(4);
  u = upgrade(uid);
  assert.equal(u.status, 0, u.out);
  assert.match(u.out, /stopped again, as it was/, u.out);
  assert.equal(imageOf(), fourth);
  assert.match(stateOf(), /exited|stopped/);
  assert.equal(vpTry('image', 'exists', third), null, 'the unused, unnamed image was kept');
  u = upgrade(uid);
  assert.match(u.out, /already on the current image/, u.out);
  r = await runPython(c, 'print(x + y)');
  assert.match(r.text, /48/, r.text);

  // Bad arguments: usage, no such user.
  assert.equal(upgrade().status, 2);
  assert.equal(upgrade('--all', uid).status, 2);
  u = upgrade('nobody-by-that-name');
  assert.equal(u.status, 3, u.out);
  assert.match(u.out, /nobody-by-that-name: no such user/);
  u = upgrade('no such name');
  assert.equal(u.status, 2, u.out);
  assert.match(u.out, /neither a user id nor the name of one/);
  await c.close();
});
