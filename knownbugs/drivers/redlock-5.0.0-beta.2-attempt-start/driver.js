#!/usr/bin/env node
// knownbugs twin of knownbugs/drivers/redlock-5.0.0-beta.2: the same
// driver, with the acquisition's validity timed from the attempt that
// succeeded (the idea of the fix merged upstream in PR #274, written here
// as three edits, not that PR's diff), applied to the installed library at
// load time (the file on disk is not changed). In
// node_modules/redlock/dist/cjs/index.js (5.0.0-beta.2): _execute (270-299)
// reads Date.now() before each attempt (282) and returns it with the
// attempts of the successful one (286); acquire (205-229) builds the Lock's
// expiration from that time instead of the Date.now() it read once before
// the first attempt (210, 217). extend, release and everything else are
// unchanged.
const fs = require('fs'), path = require('path'), Module = require('module');
function patchModule(file, edits) { // replace each `from` (found exactly once) and load the result as the module
  let src = fs.readFileSync(file, 'utf8');
  for (const [from, to] of edits) {
    if (src.split(from).length !== 2) { process.stderr.write(`patch: ${file}: the text to replace is not found exactly once\n`); process.exit(3); }
    src = src.replace(from, () => to);
  }
  const m = new Module(file, module);
  m.filename = file;
  m.paths = Module._nodeModulePaths(path.dirname(file));
  m._compile(src, file);
  m.loaded = true;
  require.cache[file] = m;
}
patchModule(path.join(__dirname, 'node_modules/redlock/dist/cjs/index.js'), [
  [`            const { vote, stats } = await this._attemptOperation(script, keys, args);`,
   `            const attemptStart = Date.now();
            const { vote, stats } = await this._attemptOperation(script, keys, args);`],
  [`                return { attempts };`, `                return { attempts, start: attemptStart };`],
  [`            const { attempts } = await this._execute(this.scripts.acquireScript, resources, [value, duration], settings);`,
   `            const { attempts, start: attemptStart } = await this._execute(this.scripts.acquireScript, resources, [value, duration], settings);`],
  [`            return new Lock(this, resources, value, attempts, start + duration - drift);`,
   `            return new Lock(this, resources, value, attempts, attemptStart + duration - drift);`]]);
// locksim driver (docs/DRIVERS.md): npm redlock 5.0.0-beta.2 over ioredis
// 4.28.5, used as its README says: new Redlock([clients], {retryCount,
// retryDelay, retryJitter}), redlock.acquire([key], ttl) -> lock,
// lock.release(), lock.extend(ttl) -> a new Lock. Its validity is
// lock.expiration (Date.now() before the first attempt + ttl - drift:
// dist/cjs/index.js 210, 216-217; extend 251, 261-262), an absolute time on
// the driver's clock: valid_until_ms. Adapted from drivers/node-redlock
// (4.2.0's API), without its 'acquiring' point (no scenario here uses it).
const Redis = require('ioredis');
const { default: Redlock, ExecutionError, ResourceLockedError } = require('redlock');
const rl = require('readline').createInterface({ input: process.stdin });
const queue = [], waiters = [];
rl.on('line', l => waiters.length ? waiters.shift()(l) : queue.push(l));
rl.on('close', () => process.exit(0));
const next = () => queue.length ? Promise.resolve(queue.shift()) : new Promise(r => waiters.push(r));
const send = m => process.stdout.write(JSON.stringify(m) + '\n');
async function point(name) { // a pause point: say it, wait for continue
  send({ point: name });
  if (JSON.parse(await next()).type !== 'continue') process.exit(2);
}
function conn(addr, start) {
  const [host, port] = addr.split(':');
  return new Redis({ host, port: +port, connectionName: start.client, commandTimeout: start.timeout_ms,
    connectTimeout: start.timeout_ms, maxRetriesPerRequest: 0, enableReadyCheck: false });
}
async function main() {
  const start = JSON.parse(await next());
  if (start.sentinels || !(start.nodes || []).length) {
    send({ re: 'start', result: 'fail', error: 'redlock runs on independent Redis nodes (Redlock); this world is a Sentinel-managed primary: refused' });
    process.exit(0);
  }
  const nodes = start.nodes.map(a => conn(a, start)), store = conn(start.storage, start);
  for (const c of [...nodes, store]) c.on('error', () => {});
  const redlock = new Redlock(nodes, { retryCount: start.tries - 1, retryDelay: start.retry_ms, retryJitter: 0 });
  const held = new Map();
  send({ re: 'start', result: 'ok', library: 'redlock ' + JSON.parse(require('fs').readFileSync(require('path').join(__dirname, 'node_modules/redlock/package.json'))).version + ', ioredis ' + require('ioredis/package.json').version, renew: true });
  for (;;) {
    const req = JSON.parse(await next()), re = req.type;
    if (re === 'stop') process.exit(0);
    try {
      if (re === 'acquire') {
        const lock = await redlock.acquire([start.key], start.ttl_ms);
        await point('after-check');
        held.set(lock.value, lock);
        send({ re, result: 'ok', value: lock.value, valid_until_ms: lock.expiration });
      } else if (re === 'release') {
        const lock = held.get(req.value); held.delete(req.value);
        await lock.release();
        send({ re, result: 'ok' });
      } else if (re === 'renew') { // Redlock.extend (dist/cjs/index.js 246-264): extendScript on every server; a failure throws and leaves the key alone
        await point('renewing');
        const lock = await held.get(req.value).extend(start.ttl_ms);
        held.set(req.value, lock);
        send({ re, result: 'ok', value: lock.value, valid_until_ms: lock.expiration });
      } else if (re === 'read' || re === 'write') {
        const r = await store.send_command(req.command[0], ...req.command.slice(1));
        send({ re, result: 'ok', reply: Array.isArray(r) ? r.map(String) : [String(r)] });
      } else {
        send({ re, result: 'fail', error: 'not supported' });
      }
    } catch (e) {
      const clean = e instanceof ExecutionError || e instanceof ResourceLockedError || /^FENCED/.test(e.message);
      send({ re, result: clean ? 'fail' : 'unknown', error: String(e.message || e) });
    }
  }
}
main();
