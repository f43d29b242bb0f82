#!/usr/bin/env node
// locksim driver (docs/DRIVERS.md): npm redis-semaphore 5.3.x's Mutex over
// ioredis 4.28.5 (the same driver serves 5.3.0 and 5.3.1: only
// package.json differs), used as the README's "lost lock handling"
// example uses it: the caller goes on only while the library says it
// holds. One Mutex per acquisition, tryAcquire() (acquireAttemptsLimit:
// the start's tries), release(). lockTimeout is the start's ttl_ms.
//
// The refresh is carried out on the harness's renew (--lock watchdog,
// every TTL/3), not by the library's interval: refreshInterval is 0 (the
// README: "to disable auto-refresh behaviour set 0"; Lock.js tryAcquire
// then starts no interval), and renew runs the method that interval
// would run, the library's own refresh (RedisMutex.js _refresh ->
// mutex/refresh.js refreshMutex, its expireIfEqualLua script). Its
// boolean is the library's belief (Lock.js _processRefresh sets
// isAcquired false on false): renew replies ok on true, fail on false.
// Validity: the key's PX as the library's own command set it, counted
// from the moment that command was sent (the winning SET of acquire, or
// the refresh's script): valid_until_ms = that Date.now() + lockTimeout.
// The library computes none itself; this is what its commands promise.
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
  let setSentAt = 0; // Date.now() when the last SET of an acquisition was sent (the key's PX counts from its arrival)
  node.set = async (...args) => { setSentAt = Date.now(); const r = await set(...args); await point('acquiring'); return r; };
  const held = new Map();
  send({ re: 'start', result: 'ok', renew: true, library: 'redis-semaphore ' + require('redis-semaphore/package.json').version + ' Mutex, ioredis ' + require('ioredis/package.json').version });
  for (;;) {
    const req = JSON.parse(await next()), re = req.type;
    if (re === 'stop') process.exit(0);
    try {
      if (re === 'acquire') {
        const mutex = new Mutex(node, start.key, {
          lockTimeout: start.ttl_ms, // the key's PX (acquire.js 16) and each refresh's PEXPIRE (refresh.js 18)
          acquireAttemptsLimit: start.tries, // set-nx-cad's tries, retryInterval apart (acquire.js 14, 23)
          retryInterval: start.retry_ms,
          refreshInterval: 0, // no interval: the harness's renew runs the refresh (above)
        });
        if (!(await mutex.tryAcquire())) {
          send({ re, result: 'fail', error: `not acquired in ${start.tries} attempts` });
          continue;
        }
        const until = setSentAt + start.ttl_ms;
        await point('after-check');
        held.set(mutex.identifier, mutex);
        send({ re, result: 'ok', value: mutex.identifier, valid_until_ms: until });
      } else if (re === 'renew') {
        // The library's own refresh (RedisMutex.js 30-32): 5.3.0's script
        // (mutex/refresh.js 10-27) pexpires the key when it holds our
        // identifier and re-creates it when it is missing (20-23); 5.3.1's
        // only pexpires (17-20). Its reply is the library's belief.
        const mutex = held.get(req.value);
        await point('renewing');
        const sent = Date.now();
        if (await mutex._refresh()) send({ re, result: 'ok', valid_until_ms: sent + start.ttl_ms });
        else send({ re, result: 'fail', error: 'refresh returned false: the library would call onLockLost (Lock.js _processRefresh)' });
      } else if (re === 'release') {
        // release (Lock.js 144-154) stops the refresh and runs delIfEqualLua
        // (mutex/release.js 11-20) only while isAcquired; it ignores the
        // script's result (release.js 23-24): it never says "not the owner".
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
