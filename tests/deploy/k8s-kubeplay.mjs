// tests/deploy/k8s-kubeplay.mjs TAG IMAGE DIR: writes DIR/egress.yaml and
// DIR/supervisor.yaml, the Deployments of deploy/kubernetes/ with their
// ConfigMaps as `podman kube play` (Podman 4.3.1) takes them, for
// tests/deploy/k8s-kubeplay.sh.  Everything is named after TAG and runs
// IMAGE.  What Podman is not told by a kubelet, or does otherwise, is
// said where it is changed; the rest of each spec is played as written.
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const YAML = createRequire(new URL('../k8s/package.json', import.meta.url))('yaml');
const [tag, image, dir] = process.argv.slice(2);
const load = (f) => YAML.parseAllDocuments(readFileSync(`deploy/kubernetes/${f}`, 'utf8'))
  .map((d) => d.toJS()).filter(Boolean);
const emit = (f, docs) => writeFileSync(join(dir, f), docs.map((d) => `---\n${YAML.stringify(d)}`).join(''));

// One Deployment and the ConfigMaps it mounts, renamed for this run.
function play(deployment, configMaps) {
  const ps = deployment.spec.template.spec;
  deployment.metadata.name = `${tag}-${deployment.metadata.name}`;
  for (const c of [...(ps.initContainers || []), ...ps.containers]) {
    c.image = image;
    // Podman 4.3.1 publishes a containerPort on every host address, where
    // it would collide with other suites; the script talks to the
    // containers from inside.  The probes are the kubelet's (Podman
    // ignores the readiness probe and needs systemd for the other) and
    // name the ports.
    delete c.ports;
    delete c.readinessProbe;
    delete c.livenessProbe;
  }
  for (const v of ps.volumes || []) {
    if (v.configMap) {
      const cm = configMaps.find((m) => m.metadata.name === v.configMap.name);
      cm.metadata.name = v.configMap.name = `${tag}-${cm.metadata.name}`;
    }
    // Podman 4.3 makes an emptyDir a named volume of the volume's name,
    // shared by every pod that names one alike: give it this run's name.
    if (v.emptyDir) {
      const old = v.name;
      v.name = `${tag}-${old}`;
      for (const c of [...(ps.initContainers || []), ...ps.containers])
        for (const m of c.volumeMounts || []) if (m.name === old) m.name = v.name;
    }
  }
  // The image declares VOLUME /workspace, and Podman gives a container
  // that mounts nothing there an anonymous volume (a kubelet makes none);
  // kube down leaves an init container's behind, one per run.  An emptyDir
  // of this run's name takes its place and goes with the others.
  const wsVol = `${tag}-image-volume`;
  for (const c of [...(ps.initContainers || []), ...ps.containers]) {
    if ((c.volumeMounts || []).some((m) => m.mountPath === '/workspace')) continue;
    (c.volumeMounts ||= []).push({ name: wsVol, mountPath: '/workspace' });
    if (!(ps.volumes ||= []).some((v) => v.name === wsVol)) ps.volumes.push({ name: wsVol, emptyDir: {} });
  }
  return ps;
}

const egress = load('40-egress.yaml');
const edep = egress.find((o) => o.kind === 'Deployment');
const ecms = egress.filter((o) => o.kind === 'ConfigMap');
play(edep, ecms);
emit('egress.yaml', [...ecms, edep]);

const sdep = load('30-supervisor.yaml').find((o) => o.kind === 'Deployment');
const scms = load('20-supervisor-config.yaml');
const names = { port: sdep.spec.template.spec.containers[0].ports[0].containerPort };
const ps = play(sdep, scms);
// Secrets: podman secrets of this run's names (the script makes them).
for (const v of ps.volumes)
  if (v.secret) {
    names.keySecret = v.secret.secretName = `${tag}-${v.secret.secretName}`;
    v.secret.optional = false;	// Podman 4.3.1 dereferences it unset
  }
for (const e of ps.containers[0].env || [])
  if (e.valueFrom?.secretKeyRef) {
    names.tokenSecret = e.valueFrom.secretKeyRef.name = `${tag}-${e.valueFrom.secretKeyRef.name}`;
    names.tokenKey = e.valueFrom.secretKeyRef.key;
  }
// A kubelet gives every container these two variables and the service
// account's token, CA and namespace; here the API server is an address
// nothing answers at (TEST-NET-1), so the supervisor serves without one.
ps.containers[0].env.push({ name: 'KUBERNETES_SERVICE_HOST', value: '192.0.2.1' },
  { name: 'KUBERNETES_SERVICE_PORT', value: '443' });
ps.containers[0].volumeMounts.push({ name: 'sa', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true });
ps.volumes.push({ name: 'sa', hostPath: { path: join(dir, 'sa'), type: 'Directory' } });
// Podman 4.3.1 restarts an init container that exited under Always and
// then fails to remove it ("container state improper").
ps.restartPolicy = 'OnFailure';
names.keyFile = ps.initContainers[0].command.at(-1);
emit('supervisor.yaml', [...scms, sdep]);
writeFileSync(join(dir, 'names.sh'), Object.entries(names).map(([k, v]) => `${k}='${v}'\n`).join(''));
