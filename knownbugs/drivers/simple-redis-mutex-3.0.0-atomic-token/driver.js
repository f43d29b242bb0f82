#!/usr/bin/env node
// knownbugs twin of knownbugs/drivers/simple-redis-mutex-3.0.0: the same
// driver, with the fix suggested in docs/upstream/simple-redis-mutex-fencing-order.md
// applied to the installed library at load time (the file on disk is not
// changed). The edits, in node_modules/simple-redis-mutex/dist/index.js
// (3.0.0, tryLock): the grant (SET NX PX, lines 108-111) and the fencing
// token (INCR, line 146) become one script, ACQUIRE_SCRIPT below (SET NX
// PX, and INCR of the token counter only if the SET succeeded), so tokens
// follow grant order; the script's 0 means not granted (line 112's test).
// Nothing else differs.
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
const ACQUIRE_SCRIPT = 'if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return redis.call("INCR", KEYS[2]) end return 0';
globalThis.KNOWNBUGS_ACQUIRE_SCRIPT = ACQUIRE_SCRIPT;
globalThis.KNOWNBUGS_PATCH = 'atomic-token patch';
patchModule(path.join(__dirname, 'node_modules/simple-redis-mutex/dist/index.js'), [
  [`const REDIS_OK = 'OK';`, `const REDIS_OK = 'OK';
const ACQUIRE_SCRIPT = ${JSON.stringify(ACQUIRE_SCRIPT)};`],
  [`        const result = yield redis.set(lockKey, lockValue, {
            NX: true,
            PX: timeout,
        });
        if (result != REDIS_OK) {`,
   `        const token = yield redis.eval(ACQUIRE_SCRIPT, {
            keys: [lockKey, REDIS_FENCING_TOKENS_COUNTER],
            arguments: [lockValue, String(timeout)],
        });
        if (token === 0) {`],
  [`        release.fencingToken = yield redis.incr(REDIS_FENCING_TOKENS_COUNTER);`,
   `        release.fencingToken = token;`]]);
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
  // is marked by wrapping the command that grants the lock (3.0.0's
  // tryLock: SET NX PX, dist/index.js 108-111; the atomic-token twin: its
  // one EVAL), so that the grant's reply reaches the rest of tryLock (the
  // fencing token's INCR at 146 in 3.0.0) only after the harness's continue.
  const set = node.set.bind(node), evl = node.eval.bind(node);
  node.set = async (...args) => { const r = await set(...args); if (args[2] && args[2].NX) await point('acquiring'); return r; };
  node.eval = async (...args) => { const r = await evl(...args); if (args[0] === globalThis.KNOWNBUGS_ACQUIRE_SCRIPT) await point('acquiring'); return r; };
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
        const release = await lock(node, start.key, { timeout: start.ttl_ms, pollingInterval: start.retry_ms, failAfter: start.tries * start.retry_ms });
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
