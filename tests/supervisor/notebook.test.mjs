// Notebook habits through the supervisor (make test-supervisor), with real
// Podman and the sandbox image (trixie's Python and pandas 2.x): the cases
// of tests/e2e/notebook-cases.mjs, with the SDK client as LibreChat uses it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TAG, IMAGE, user, startPodman, stateDir, startSupervisor, cleanup, imagePresent } from './lib.mjs';
import { defineNotebookTests } from '../e2e/notebook-cases.mjs';

const podmanSock = `/run/vsv-${TAG}.podman.sock`;
const uid = user('notebook');
const other = user('notebook2');
let podman, sv;

before(async () => {
  podman = await startPodman(podmanSock);
  assert.ok(imagePresent(), `${IMAGE} is not in the test storage: run make image-for-tests`);
  sv = await startSupervisor({ podmanSock, state: stateDir() });
  // The first calls create the sandboxes; later timings are the runs'.
  for (const u of [uid, other]) {
    const c = await sv.client(u);
    await c.callTool({ name: 'run_python', arguments: { code: 'print(1)' } }, undefined, { timeout: 120000 });
    await c.close();
  }
});

after(async () => {
  if (sv) await sv.stop();
  cleanup();
  if (podman) await podman.stop();
});

defineNotebookTests(test, {
  label: 'supervisor',
  connect: () => sv.client(uid),
  connectOther: () => sv.client(other),
  maxImages: 4,
});
