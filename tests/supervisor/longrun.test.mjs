// Long runs through the supervisor (make test-supervisor), with real Podman
// and the sandbox image: the cases of tests/e2e/longrun-cases.mjs, with the
// SDK client as LibreChat uses it.  A cancel travels as its own POST; a
// client that drops its connection makes the supervisor close its agent
// connection, which the agent takes as a cancel.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { TOKEN, user, fileSupervisor } from './lib.mjs';
import { makeFetch, replyOf } from '../e2e/harness.mjs';
import { defineLongRunTests } from '../e2e/longrun-cases.mjs';

const uid = user('longrun');
const stack = fileSupervisor({ before, after }, [uid]);

defineLongRunTests(test, {
  label: 'supervisor',
  connect: () => stack.sv.client(uid),
  // A connection of its own each time, so that aborting one drops it.
  post: async (msg, { signal } = {}) => {
    const f = makeFetch(null);
    try {
      const res = await f(`${stack.sv.base}/mcp`, {
        method: 'POST', signal, body: JSON.stringify(msg),
        headers: {
          'content-type': 'application/json', accept: 'application/json, text/event-stream',
          authorization: `Bearer ${TOKEN}`, 'x-user-id': uid,
        },
      });
      return replyOf(res);
    } finally {
      f.close().catch(() => {});
    }
  },
});

test('supervisor: it logs the clients that went away mid-call', () => {
  assert.match(stack.sv.stderr(), /the client went away/);
});
