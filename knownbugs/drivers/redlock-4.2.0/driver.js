#!/usr/bin/env node
// locksim driver (docs/DRIVERS.md): npm redlock 4.2.0 over ioredis, used as
// its README says: new Redlock([clients], {retryCount, retryDelay}),
// redlock.lock(key, ttl) -> lock, lock.unlock(), lock.extend(ttl). Its
// validity is lock.expiration (Date.now() at the start + ttl - drift), an
// absolute time on the driver's clock: valid_until_ms.
const Redis = require('ioredis');
const Redlock = require('redlock');
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
  if (start.sentinels || !(start.nodes || []).length) { // Redlock is for independent masters (its README): no Sentinel world
    send({ re: 'start', result: 'fail', error: 'node-redlock runs on independent Redis nodes (Redlock); this world is a Sentinel-managed primary with replicas: refused' });
    process.exit(0);
  }
  const nodes = start.nodes.map(a => conn(a, start)), store = conn(start.storage, start);
  for (const c of [...nodes, store]) c.on('error', () => {});
  const redlock = new Redlock(nodes, { retryCount: start.tries - 1, retryDelay: start.retry_ms, retryJitter: 0 });
  redlock.on('clientError', () => {});
  // redlock has no hook inside lock(): the 'acquiring' point is marked by
  // wrapping _executeScript (redlock.js 452) so that a node's reply to
  // lockScript is handed to lock()'s vote count and validity check
  // (redlock.js 403-419) only after the harness's continue.
  const exec = redlock._executeScript.bind(redlock);
  redlock._executeScript = (server, name, args, cb) =>
    exec(server, name, args, name !== 'lockScript' ? cb : (err, res) => point('acquiring').then(() => { cb(err, res); }));
  const held = new Map();
  send({ re: 'start', result: 'ok', library: 'redlock ' + require('redlock/package.json').version + ', ioredis ' + require('ioredis/package.json').version, renew: true });
  for (;;) {
    const req = JSON.parse(await next()), re = req.type;
    if (re === 'stop') process.exit(0);
    try {
      if (re === 'acquire') {
        const lock = await redlock.lock(start.key, start.ttl_ms);
        await point('after-check');
        held.set(lock.value, lock);
        send({ re, result: 'ok', value: lock.value, valid_until_ms: lock.expiration });
      } else if (re === 'release') {
        const lock = held.get(req.value); held.delete(req.value);
        await lock.unlock();
        send({ re, result: 'ok' });
      } else if (re === 'renew') { // Lock.extend (redlock.js 105, 294-310): extendScript on every server, the validity check at 419
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
      const clean = e instanceof Redlock.LockError || /^FENCED/.test(e.message);
      send({ re, result: clean ? 'fail' : 'unknown', error: String(e.message || e) });
    }
  }
}
main();
