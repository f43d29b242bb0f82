#!/usr/bin/env node
// knownbugs twin of knownbugs/drivers/simple-redis-mutex-3.0.0: the same
// driver, with the fix suggested in docs/upstream/simple-redis-mutex-lock-exits.md
// applied to the installed library at load time (the file on disk is not
// changed). The one edit, in node_modules/simple-redis-mutex/dist/index.js
// (3.0.0, lock's attempt, lines 57-62): tryLock(...).then(onGranted) gets a
// rejection handler, (err) => { clean(); reject(err); }, so a failed
// command inside tryLock rejects the promise lock() returned (the caller's
// try/catch sees it) instead of being an unhandled rejection that ends the
// process. Nothing else differs.
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
globalThis.KNOWNBUGS_PATCH = 'lock-catch patch';
patchModule(path.join(__dirname, 'node_modules/simple-redis-mutex/dist/index.js'), [[
  `            tryLock(redis, lockName, { timeout }).then(([hasLock, release]) => {
                if (!hasLock)
                    return;
                clean();
                resolve(release);
            });`,
  `            tryLock(redis, lockName, { timeout }).then(([hasLock, release]) => {
                if (!hasLock)
                    return;
                clean();
                resolve(release);
            }, (err) => {
                clean();
                reject(err);
            });`]]);
const { createClient } = require('redis');
const { lock } = require('simple-redis-mutex');
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
// node-redis 5: the harness's socket timeout as every command's timeout
// (commandOptions.timeout), commands refused at once while disconnected
// (disableOfflineQueue: a crashed node answers an error, not a hang past
// the harness's bound), reconnect every 50 ms.
function conn(addr, start) {
  const [host, port] = addr.split(':');
  const c = createClient({ socket: { host, port: +port, connectTimeout: Math.max(start.timeout_ms, 100), reconnectStrategy: () => 50 },
    name: start.client, disableOfflineQueue: true, commandOptions: { timeout: start.timeout_ms } });
  c.on('error', () => {});
  return c;
}
async function main() {
  const start = JSON.parse(await next());
  if (start.sentinels || (start.nodes || []).length !== 1) {
    send({ re: 'start', result: 'fail', error: 'simple-redis-mutex is a lock on one Redis node: refused' });
    process.exit(0);
  }
  const node = conn(start.nodes[0], start), store = conn(start.storage, start);
  await Promise.all([node.connect(), store.connect()]);
  // The library has no hook inside its acquisition: the 'acquiring' point
  // is marked by wrapping the command that grants the lock (tryLock's SET
  // NX PX, dist/index.js 108-111), so that the grant's reply reaches the
  // rest of tryLock (the fencing token's INCR at 146) only after the
  // harness's continue. Only while an acquire request is being answered: an
  // attempt lock() had already started when failAfter rejected goes on in
  // the background (dist/index.js 78-84 stop only new attempts), and a
  // point written during another request breaks the protocol.
  let acquiring = false;
  const set = node.set.bind(node);
  node.set = async (...args) => { const r = await set(...args); if (acquiring && args[2] && args[2].NX) await point('acquiring'); return r; };
  const held = new Map();
  let n = 0;
  const version = JSON.parse(require('fs').readFileSync(require('path').join(__dirname, 'node_modules/simple-redis-mutex/package.json'))).version;
  send({ re: 'start', result: 'ok', library: 'simple-redis-mutex ' + version + (globalThis.KNOWNBUGS_PATCH ? ' (' + globalThis.KNOWNBUGS_PATCH + ')' : '') + ', redis ' + require('redis/package.json').version });
  for (;;) {
    const req = JSON.parse(await next()), re = req.type;
    if (re === 'stop') process.exit(0);
    try {
      if (re === 'acquire') {
        // lock() as the README uses it: blocks until granted (pub/sub wake-ups
        // and polling every pollingInterval), rejects after failAfter.
        acquiring = true;
        let release;
        try {
          release = await lock(node, start.key, { timeout: start.ttl_ms, pollingInterval: start.retry_ms, failAfter: start.tries * start.retry_ms });
        } finally {
          acquiring = false;
        }
        await point('after-check');
        const value = `${start.client}-${++n}`;
        held.set(value, release);
        const out = { re, result: 'ok', value };
        if (release.fencingToken > 0) out.token = release.fencingToken;
        send(out);
      } else if (re === 'release') {
        const release = held.get(req.value); held.delete(req.value);
        await release();
        send({ re, result: 'ok' });
      } else if (re === 'read' || re === 'write') {
        const r = await store.sendCommand(req.command);
        send({ re, result: 'ok', reply: Array.isArray(r) ? r.map(String) : [String(r)] });
      } else {
        send({ re, result: 'fail', error: 'not supported' });
      }
    } catch (e) {
      const msg = String((e && e.message) || e);
      send({ re, result: /^FENCED/.test(msg) || /could not be acquired/.test(msg) ? 'fail' : 'unknown', error: msg });
    }
  }
}
main();
