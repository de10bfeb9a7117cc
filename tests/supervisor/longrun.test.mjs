// Long runs through the supervisor (make test-supervisor), with real Podman
// and the sandbox image: the cases of tests/e2e/longrun-cases.mjs, with the
// SDK client as LibreChat uses it.  A cancel travels as its own POST; a
// client that drops its connection makes the supervisor close its agent
// connection, which the agent takes as a cancel.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TOKEN, TAG, IMAGE, user, startPodman, stateDir, startSupervisor, cleanup, imagePresent } from './lib.mjs';
import { makeFetch } from '../e2e/harness.mjs';
import { defineLongRunTests } from '../e2e/longrun-cases.mjs';

const podmanSock = `/run/vsv-${TAG}.podman.sock`;
const uid = user('longrun');
let podman, sv;

before(async () => {
  podman = await startPodman(podmanSock);
  assert.ok(imagePresent(), `${IMAGE} is not in the test storage: run make image-for-tests`);
  sv = await startSupervisor({ podmanSock, state: stateDir() });
  // The first call creates the sandbox; later timings are the runs'.
  const c = await sv.client(uid);
  await c.callTool({ name: 'run_python', arguments: { code: 'print(1)' } }, undefined, { timeout: 120000 });
  await c.close();
});

after(async () => {
  if (sv) await sv.stop();
  cleanup();
  if (podman) await podman.stop();
});

defineLongRunTests(test, {
  label: 'supervisor',
  connect: () => sv.client(uid),
  // A connection of its own each time, so that aborting one drops it.
  post: async (msg, { signal } = {}) => {
    const f = makeFetch(null);
    try {
      const res = await f(`${sv.base}/mcp`, {
        method: 'POST', signal, body: JSON.stringify(msg),
        headers: {
          'content-type': 'application/json', accept: 'application/json, text/event-stream',
          authorization: `Bearer ${TOKEN}`, 'x-user-id': uid,
        },
      });
      const text = await res.text();
      let json = null;
      try { json = JSON.parse(text); } catch { /* not JSON */ }
      return { status: res.status, text, json };
    } finally {
      f.close().catch(() => {});
    }
  },
});

test('supervisor: it logs the clients that went away mid-call', () => {
  assert.match(sv.stderr(), /the client went away/);
});
