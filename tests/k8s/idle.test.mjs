// idle.test.mjs: scale to zero.  An idle sandbox's Pod is deleted and its
// claim kept; the next call makes a new Pod on the same claim, and the
// workspace (and the namespace the agent stores in it) is still there.
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { startStack } from './stack.mjs';
import { until } from '../e2e/harness.mjs';
import { runPython, assertClean } from './lib.mjs';

let s;
before(async () => { s = await startStack({ extra: 'idle_stop_after: 2s' }); });
after(async () => { await s?.stop(); });
afterEach(() => assertClean(s.api));

test('idle: the Pod is deleted, the PVC kept; the next call recreates the Pod and the workspace survives', async () => {
  let c = await s.sv.client('ida');
  await runPython(c, "open('notes.txt', 'w').write('still here')\ny = 7");
  await c.close();
  const first = s.api.pod('vivarium-ida');
  const claim = s.api.get('persistentvolumeclaims', 'vivarium-ida-workspace');
  await until(() => s.api.calls('delete', 'pods').some((r) => r.name === 'vivarium-ida'), { ms: 20000, what: 'the idle Pod deleted' });
  await until(() => s.api.pod('vivarium-ida') === null, { what: 'the Pod gone' });
  assert.equal(s.api.calls('delete', 'persistentvolumeclaims').length, 0, 'the claim is not deleted');
  assert.equal(s.api.get('persistentvolumeclaims', 'vivarium-ida-workspace').metadata.uid, claim.metadata.uid);
  assert.match(s.sv.stderr(), /idle/);

  c = await s.sv.client('ida');
  const r = await runPython(c, "print(open('notes.txt').read())\nprint('y' in globals() and y)");
  await c.close();
  assert.match(r.text, /still here/);
  const second = s.api.pod('vivarium-ida');
  assert.notEqual(second.metadata.uid, first.metadata.uid, 'a new Pod');
  assert.equal(second.spec.securityContext.runAsUser, first.spec.securityContext.runAsUser, 'the same uid (kept on the claim)');
  assert.equal(second.spec.volumes.find((v) => v.persistentVolumeClaim).persistentVolumeClaim.claimName, 'vivarium-ida-workspace');
  assert.equal(s.api.calls('create', 'persistentvolumeclaims').filter((q) => q.status === 201).length, 1, 'the claim made once');
  // The agent saves its namespace in the workspace when stopped (as under Podman).
  assert.match(r.text, /^7$/m, `the namespace came back: ${r.text}`);
});

test('a call that comes while the idle Pod is still terminating gets a new Pod, not the dying one', async () => {
  let c = await s.sv.client('ivy');
  await runPython(c, "open('a.txt', 'w').write('a')");
  await c.close();
  const old = s.api.pod('vivarium-ivy');
  s.api.kubelet.terminateDelayMs = 1500;
  try {
    await until(() => s.api.calls('delete', 'pods').some((r) => r.name === 'vivarium-ivy'), { ms: 20000, what: 'the idle Pod deleted' });
    assert.ok(s.api.pod('vivarium-ivy')?.metadata.deletionTimestamp, 'still terminating');
    c = await s.sv.client('ivy');
    const r = await runPython(c, "print(open('a.txt').read())");
    await c.close();
    assert.match(r.text, /^a$/m);
  } finally { s.api.kubelet.terminateDelayMs = 0; }
  const now = s.api.pod('vivarium-ivy');
  assert.ok(now, 'a Pod is there');
  assert.notEqual(now.metadata.uid, old.metadata.uid, 'a new Pod');
  assert.equal(now.metadata.deletionTimestamp, undefined, 'not a terminating one');
  assert.ok(now.status.conditions.some((x) => x.type === 'Ready' && x.status === 'True'));
});
