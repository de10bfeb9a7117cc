// tests/kubeplay/check.mjs URL SECRET PHASE: the MCP SDK client (tests/e2e's
// pinned one) against the agent of a Pod played by `podman kube play`, over
// TCP with the per-sandbox secret, as the supervisor reaches it in a
// cluster.  PHASE "first": the secret is required, run_python works, and
// what the Pod's securityContext asks for holds inside; it leaves a file
// and a variable behind.  PHASE "again" (after kube down and a new play of
// the Pod alone): both are still there, since the claim became a volume.
// Prints TAP-ish "ok"/"not ok" lines; exits 1 when any failed.
// Environment: KP_UID (the Pod's runAsUser), KP_TOKEN (what the first
// phase leaves), KP_PODMAN (the Podman version, for what it ignores).
import { connectClient, runPython as run, textOf } from '../e2e/harness.mjs';

const [url, secret, phase] = process.argv.slice(2);

const uid = Number(process.env.KP_UID);
const token = process.env.KP_TOKEN;
let fails = 0;
const ok = (cond, what, detail = '') => {
  if (cond) console.log(`ok - ${what}`);
  else { fails++; console.log(`not ok - ${what}${detail ? `\n#   ${String(detail).replace(/\n/g, '\n#   ')}` : ''}`); }
};
const stdoutOf = (r) => (/--- stdout ---\n([\s\S]*?)(?:\n--- |\n?$)/.exec(textOf(r)) || [])[1] || '';

async function post(headers) {
  const res = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
  });
  return { status: res.status, auth: res.headers.get('www-authenticate'), text: await res.text() };
}

const connect = () => connectClient(`${url}/mcp`, { headers: { Authorization: `Bearer ${secret}` }, name: 'vivarium-kubeplay' });

// What the Pod's securityContext asks for, seen from inside (one line each).
const INSIDE = `import os, errno
st = open('/proc/self/status').read()
f = lambda k: st.split(k + ':')[1].split()[0]
print('ids', os.getuid(), os.getgid(), os.geteuid())
print('capeff', f('CapEff'), 'capprm', f('CapPrm'), 'capbnd', f('CapBnd'))
print('nonewprivs', f('NoNewPrivs'), 'seccomp', f('Seccomp'))
def tryw(p):
    try:
        open(p, 'w').write('x'); os.unlink(p); return 'writable'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
print('root', tryw('/usr/kp-probe'), tryw('/etc/kp-probe'))
print('tmp', tryw('/tmp/kp-probe'))
mounts = {l.split()[1]: l.split()[2] for l in open('/proc/mounts')}
print('tmpfs', mounts.get('/tmp'))
print('home', os.environ.get('HOME'), tryw(os.environ.get('HOME', '/nonexistent') + '/kp-probe'))
print('secret-env', sorted(k for k in os.environ if 'SECRET' in k))
ws = os.stat('/workspace')
print('workspace-writable', tryw('/workspace/kp-probe'))`;

try {
  const bare = await post({});
  ok(bare.status === 401 && bare.auth === 'Bearer', 'no Authorization: 401 with WWW-Authenticate: Bearer', `${bare.status} ${bare.text}`);
  const wrong = await post({ authorization: `Bearer ${secret.slice(0, -1)}x` });
  ok(wrong.status === 401, 'a wrong secret: 401', wrong.status);
  const health = await fetch(`${url}/health`);
  ok(health.status === 200, '/health needs no secret (the readiness probe)');

  const client = await connect();
  try {
    if (phase === 'first') {
      const r = await run(client, `print('hello from the pod')\nkept = ${JSON.stringify(token)}\nopen('kept.txt', 'w').write(kept)`);
      ok(r.isError === false && /hello from the pod/.test(textOf(r)), 'run_python prints over TCP with the secret', textOf(r));

      const s = stdoutOf(await run(client, INSIDE));
      const line = (k) => (new RegExp(`^${k} (.*)$`, 'm').exec(s) || [])[1] || '';
      ok(line('ids') === `${uid} ${uid} ${uid}`, `runs as the Pod's runAsUser/runAsGroup ${uid}, not the image's 1000`, s);
      ok(/^capeff 0+ capprm 0+ capbnd 0+$/.test(`capeff ${line('capeff')}`), 'no capabilities (drop: [ALL]): effective, permitted and bounding sets empty', line('capeff'));
      ok(/^1 seccomp 2$/.test(line('nonewprivs')), 'allowPrivilegeEscalation: false is no_new_privs; a seccomp filter is on', line('nonewprivs'));
      ok(line('root') === 'EROFS EROFS', 'readOnlyRootFilesystem: /usr and /etc are read-only (EROFS)', line('root'));
      ok(line('tmp') === 'writable', '/tmp (emptyDir) is writable', line('tmp'));
      // emptyDir medium: Memory is a tmpfs in Kubernetes; Podman 4.3's kube
      // play makes every emptyDir a volume (README).  Said, not failed.
      if (line('tmpfs') === 'tmpfs') ok(true, '/tmp is a tmpfs');
      else console.log(`ok - /tmp is ${line('tmpfs')}, not tmpfs # SKIP podman ${process.env.KP_PODMAN} kube play ignores emptyDir medium: Memory`);
      ok(/^\/tmp writable$/.test(line('home')), 'HOME is /tmp and writable for an arbitrary uid', line('home'));
      ok(line('secret-env') === '[]', 'the runner does not see VIVARIUM_AGENT_SECRET', line('secret-env'));
      ok(line('workspace-writable') === 'writable', '/workspace (the claim) is writable by the uid', line('workspace-writable'));

      // The data stack and a chart under that uid (matplotlib's cache in HOME).
      const chart = await run(client, 'import pandas as pd, matplotlib.pyplot as plt\n' +
        'df = pd.DataFrame({"x": [1, 2, 3], "y": [2, 4, 8]})\nprint(df.y.sum())\nplt.plot(df.x, df.y)\nplt.savefig("chart.png")');
      ok(chart.isError === false && /14/.test(textOf(chart)) && chart.content.some((c) => c.type === 'image'),
        'pandas and a matplotlib chart work under the uid', textOf(chart));
    } else {
      const r = await run(client, 'print("kept", kept, open("kept.txt").read())');
      ok(new RegExp(`kept ${token} ${token}`).test(textOf(r)),
        'after kube down and play: the file and the namespace are still in /workspace', textOf(r));
      const l = await client.callTool({ name: 'list_files', arguments: {} });
      ok(/kept\.txt/.test(textOf(l)) && /chart\.png/.test(textOf(l)), 'list_files shows what the first Pod wrote', textOf(l));
    }
  } finally {
    await client.close();
  }
} catch (e) {
  ok(false, `${phase}: the client failed`, e.stack || e);
}
process.exit(fails ? 1 : 0);
