// Notebook habits through the supervisor (make test-supervisor), with real
// Podman and the sandbox image (trixie's Python and pandas 2.x): the cases
// of tests/e2e/notebook-cases.mjs, with the SDK client as LibreChat uses it.
import { test, before, after } from 'node:test';
import { user, fileSupervisor } from './lib.mjs';
import { defineNotebookTests } from '../e2e/notebook-cases.mjs';

const uid = user('notebook');
const other = user('notebook2');
const stack = fileSupervisor({ before, after }, [uid, other]);

defineNotebookTests(test, {
  label: 'supervisor',
  connect: () => stack.sv.client(uid),
  connectOther: () => stack.sv.client(other),
  maxImages: 4,
});
