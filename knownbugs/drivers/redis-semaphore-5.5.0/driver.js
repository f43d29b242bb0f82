#!/usr/bin/env node
// locksim driver (docs/DRIVERS.md): npm redis-semaphore 5.5.x's Mutex over
// ioredis 4.28.5 (the same driver serves 5.5.0 and 5.5.1: only
// package.json differs), used as the README's first example uses it: new
// Mutex(client, key, options) with the default onLockLost, tryAcquire(),
// release(). Built from knownbugs/drivers/redis-semaphore-5.8.0's driver;
// the one difference is that onLockLost is left at the library's default,
// which throws (misc.js 10-12) from the background refresh (Lock.js
// _processRefresh): an unhandled rejection that ends a node 20 process.
// One Mutex per acquisition (a fresh identifier: the key's value).
// lockTimeout is the start's ttl_ms (the key's PX); auto-refresh is the
// library's default (refreshInterval = round(0.8 x lockTimeout), Lock.js
// 38, 79-82). No validity (isAcquired is a boolean), no renew (the refresh
// is the library's private, background _refresh). One node, or a
// Sentinel-managed primary through ioredis's Sentinel connector.
const Redis = require('ioredis');
const { Mutex } = require('redis-semaphore');
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
// primary is the Sentinel-managed primary through ioredis's own Sentinel
// connector: it asks the Sentinels for master_name's address on every
// (re)connection, and natMap (SentinelConnector/index.js 177-179) maps
// the address a node announces to this client's proxy for it (the
// start's routes), keeping the partitions and delays on its links. The
// ready check makes it refuse a node that is no longer the master
// (SentinelConnector/index.js 37-47).
function primary(start) {
  const natMap = {};
  for (const [name, route] of Object.entries(start.routes || {})) {
    const [host, port] = route.split(':');
    natMap[name] = { host, port: +port };
  }
  return new Redis({ sentinels: start.sentinels.map(a => { const [host, port] = a.split(':'); return { host, port: +port }; }),
    name: start.master_name, natMap, connectionName: start.client, commandTimeout: start.timeout_ms,
    connectTimeout: start.timeout_ms, sentinelCommandTimeout: start.timeout_ms, maxRetriesPerRequest: 0 });
}
async function main() {
  const start = JSON.parse(await next());
  if (!start.sentinels && (start.nodes || []).length !== 1) { // Mutex is the one-node lock (RedlockMutex is the multi-node one)
    send({ re: 'start', result: 'fail', error: `node-redis-semaphore wraps Mutex, a lock on one Redis node; this world has ${(start.nodes || []).length} nodes: refused` });
    process.exit(0);
  }
  const node = start.sentinels ? primary(start) : conn(start.nodes[0], start), store = conn(start.storage, start);
  for (const c of [node, store]) c.on('error', () => {});
  // The library has no hook inside acquire: the 'acquiring' point is marked
  // by wrapping the client's set, which acquireMutex calls once per attempt
  // (mutex/acquire.js 16): the SET's reply reaches the loop's check
  // (acquire.js 18) only after the harness's continue.
  const set = node.set.bind(node);
  node.set = async (...args) => { const r = await set(...args); await point('acquiring'); return r; };
  const held = new Map();
  send({ re: 'start', result: 'ok', library: 'redis-semaphore ' + require('redis-semaphore/package.json').version + ' Mutex, ioredis ' + require('ioredis/package.json').version });
  for (;;) {
    const req = JSON.parse(await next()), re = req.type;
    if (re === 'stop') process.exit(0);
    try {
      if (re === 'acquire') {
        const mutex = new Mutex(node, start.key, {
          lockTimeout: start.ttl_ms, // the key's PX (acquire.js 16) and each refresh's PEXPIRE (refresh.js 18)
          acquireAttemptsLimit: start.tries, // set-nx-cad's tries, retryInterval apart (acquire.js 14, 23)
          retryInterval: start.retry_ms,
          // acquireTimeout: the default 10 s (misc.js 6), past the tries' end.
          // refreshInterval: the default, round(0.8 x lockTimeout) (Lock.js 38).
          // onLockLost: the default, which throws (misc.js 10-12).
        });
        if (!(await mutex.tryAcquire())) {
          send({ re, result: 'fail', error: `not acquired in ${start.tries} attempts` });
          continue;
        }
        await point('after-check');
        held.set(mutex.identifier, mutex);
        send({ re, result: 'ok', value: mutex.identifier });
      } else if (re === 'release') {
        // release (Lock.js 131-141) stops the refresh, runs delIfEqualLua
        // (mutex/release.js 10-19) while isAcquired, then sets isAcquired
        // false; it ignores the script's result (release.js 22-23).
        const mutex = held.get(req.value); held.delete(req.value);
        await mutex.release();
        send({ re, result: 'ok' });
      } else if (re === 'read' || re === 'write') {
        const r = await store.send_command(req.command[0], ...req.command.slice(1));
        send({ re, result: 'ok', reply: Array.isArray(r) ? r.map(String) : [String(r)] });
      } else {
        send({ re, result: 'fail', error: 'not supported' });
      }
    } catch (e) {
      send({ re, result: /^FENCED/.test(e.message) ? 'fail' : 'unknown', error: String(e.message || e) });
    }
  }
}
main();
