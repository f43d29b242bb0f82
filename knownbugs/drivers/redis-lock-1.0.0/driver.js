#!/usr/bin/env node
// locksim driver (docs/DRIVERS.md): npm redis-lock 1.0.0 over node-redis
// 4.7.1, used as its README says: const lock = redisLock(client);
// const done = await lock(name, timeout); await done(). timeout is the
// start's ttl_ms (the key's PX). It exposes no validity (done is all the
// caller gets) and no fencing token: the driver sends neither. One node.
const { createClient } = require('redis');
const redisLock = require('redis-lock');
const rl = require('readline').createInterface({ input: process.stdin });
const queue = [], waiters = [];
rl.on('line', l => waiters.length ? waiters.shift()(l) : queue.push(l));
rl.on('close', () => process.exit(0));
const next = () => queue.length ? Promise.resolve(queue.shift()) : new Promise(r => waiters.push(r));
const send = m => process.stdout.write(JSON.stringify(m) + '\n');
function conn(addr, start) {
  const [host, port] = addr.split(':');
  const c = createClient({ socket: { host, port: +port, connectTimeout: Math.max(start.timeout_ms, 100), reconnectStrategy: () => 50 }, name: start.client });
  c.on('error', () => {});
  return c;
}
const sleep = ms => new Promise(r => setTimeout(r, ms));
async function main() {
  const start = JSON.parse(await next());
  if (start.sentinels || (start.nodes || []).length !== 1) {
    send({ re: 'start', result: 'fail', error: 'redis-lock is a lock on one Redis node: refused' });
    process.exit(0);
  }
  const node = conn(start.nodes[0], start), store = conn(start.storage, start);
  await Promise.all([node.connect(), store.connect()]);
  // redisLock(client, retryDelay): the library's default retry delay (50 ms,
  // index.js 4); lock(name, timeout) retries until granted (index.js 7-11,
  // 23-25), with no limit and no way to cancel. The harness bounds a request
  // at 2 TTLs (docs/DRIVERS.md, Bad drivers): the driver gives up after 1.5
  // TTL and stops that acquisition's retries by handing it a client whose
  // SET never settles from then on (its retry loop waits on it forever), so
  // no abandoned acquisition takes the key later.
  function cancellable() {
    let cancelled = false;
    const client = new Proxy(node, { get(t, k) {
      if (k === 'set') return (...a) => cancelled ? new Promise(() => {}) : t.set(...a);
      const v = t[k];
      return typeof v === 'function' ? v.bind(t) : v;
    } });
    return { client, cancel: () => { cancelled = true; } };
  }
  const held = new Map();
  let n = 0;
  const version = JSON.parse(require('fs').readFileSync(require('path').join(__dirname, 'node_modules/redis-lock/package.json'))).version;
  send({ re: 'start', result: 'ok', library: 'redis-lock ' + version + (globalThis.KNOWNBUGS_PATCH ? ' (' + globalThis.KNOWNBUGS_PATCH + ')' : '') + ', redis ' + require('redis/package.json').version });
  for (;;) {
    const req = JSON.parse(await next()), re = req.type;
    if (re === 'stop') process.exit(0);
    try {
      if (re === 'acquire') {
        const { client, cancel } = cancellable();
        const done = await Promise.race([redisLock(client)(start.key, start.ttl_ms), sleep(1.5 * start.ttl_ms).then(() => null)]);
        if (!done) {
          cancel(); // a SET already sent may still be granted: its key then lives until its PX
          send({ re, result: 'fail', error: `not granted within ${1.5 * start.ttl_ms} ms` });
          continue;
        }
        const value = `${start.client}-${++n}`;
        held.set(value, done);
        send({ re, result: 'ok', value });
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
      send({ re, result: /^FENCED/.test(msg) ? 'fail' : 'unknown', error: msg });
    }
  }
}
main();
