// Notebook habits against the agent directly (make test-agent), with
// Debian 12's Python and pandas 1.5: the cases of notebook-cases.mjs;
// tests/supervisor/notebook.test.mjs runs them through the supervisor in
// the sandbox image.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startAgent } from './harness.mjs';
import { defineNotebookTests } from './notebook-cases.mjs';

let agent, other;

before(async () => {
  const env = { VIVARIUM_PYTHON: process.env.VIVARIUM_PYTHON || 'python3', VIVARIUM_MAX_IMAGES: '4' };
  agent = await startAgent({ transport: 'unix', env });
  // A second workspace, for the background job that outlives 60 s.
  other = await startAgent({ transport: 'unix', env });
});

after(async () => {
  if (agent) assert.equal(await agent.stop(), 0);
  if (other) assert.equal(await other.stop(), 0);
});

defineNotebookTests(test, {
  label: 'agent',
  connect: () => agent.connect(),
  connectOther: () => other.connect(),
  maxImages: 4,
});
