// npm redlock 4.2.0: a failed lock.extend deletes the holder's own key
// (redlock.js 424: _lock's failure path unlocks the value on every
// server, and an extension reuses the lock's value) while lock.expiration
// keeps the old validity (redlock.js 306-307 run only on success).
// Needs a throwaway redis-server that allows DEBUG (to stall it 30 ms):
//   redis-server --port 6391 --save "" --enable-debug-command yes &
//   npm ci && node repro.js 6391
//   node repro.js 6391 fixed   # an extension's failure path skips the unlock
//                              # (the suggested fix, applied by wrapping rl.unlock)
// Prints BUG and exits 1 when the key is gone while lock.expiration is
// still in the future; exits 0 otherwise.
const Redis = require('ioredis'), Redlock = require('redlock');
const port = +process.argv[2] || 6379;
(async () => {
  // commandTimeout 8 ms: the extend's reply, 30 ms late, counts as a failed vote.
  const c = new Redis({ port, host: '127.0.0.1', commandTimeout: 8, maxRetriesPerRequest: 0, enableReadyCheck: false });
  const admin = new Redis({ port, host: '127.0.0.1' });
  c.on('error', () => {});
  const rl = new Redlock([c], { retryCount: 2, retryDelay: 166, retryJitter: 0 });
  rl.on('clientError', () => {});
  let extending = false;
  if (process.argv.includes('fixed')) {
    const unlock = rl.unlock.bind(rl); // Lock.prototype.unlock calls this.redlock.unlock
    rl.unlock = (l, cb) => { if (!extending) return unlock(l, cb); setImmediate(() => cb && cb()); return Promise.resolve(); };
  }
  await admin.del('k');
  const lock = await rl.lock('k', 500);
  console.log('acquired: key =', await admin.get('k'), ', pttl', await admin.pttl('k'), ', lock.expiration in', lock.expiration - Date.now(), 'ms');
  admin.call('DEBUG', 'SLEEP', '0.03'); // the server stalls 30 ms: the extend's reply comes after commandTimeout
  await new Promise(r => setTimeout(r, 2));
  extending = true;
  try { await lock.extend(500); console.log('extend resolved'); }
  catch (e) { console.log('extend rejected:', e.message); }
  extending = false;
  const key = await admin.get('k'), left = lock.expiration - Date.now();
  console.log('after: key =', key, ', lock.expiration still in', left, 'ms');
  if (key === null && left > 0) {
    console.log('BUG: the holder\'s key was deleted by its own failed extend, yet lock.expiration promises', left, 'ms more');
    process.exit(1);
  }
  console.log('no bug seen');
  process.exit(0);
})();
