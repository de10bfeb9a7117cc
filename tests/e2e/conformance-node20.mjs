// conformance-node20.mjs: lets @modelcontextprotocol/conformance (built for
// Node 22) run on Node 20, as `node --import ./conformance-node20.mjs`.  Its
// entry imports fs.globSync, which Node 20 lacks and the server scenarios
// never call: its 'fs' gets the real module plus a globSync that says so.
import { register } from 'node:module';

const fsShim = 'data:text/javascript,' + encodeURIComponent(
  "import fs from 'node:fs'; export * from 'node:fs'; export default fs;" +
  "export function globSync() { throw new Error('fs.globSync needs Node 22'); }");
const hooks = 'data:text/javascript,' + encodeURIComponent(
  `export async function resolve(spec, ctx, next) {
    if ((spec === 'fs' || spec === 'node:fs') && ctx.parentURL &&
        ctx.parentURL.includes('/@modelcontextprotocol/conformance/'))
      return { url: ${JSON.stringify(fsShim)}, shortCircuit: true };
    return next(spec, ctx);
  }`);
register(hooks);
