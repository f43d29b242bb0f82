// npm redlock 4.2.0: a failed lock.extend deletes the holder's own key
// (redlock.js 424: _lock's failure path unlocks the value on every server)
// while lock.expiration keeps the old validity (307 only runs on success).
// Not a driver (the harness runs driver* files only). Run against a
// throwaway redis-server that allows DEBUG (docs/DRIVERS.md, Renewals):
//   redis-server --port 6391 --save "" --enable-debug-command yes &
//   node extend-deletes-key.js 6391
// Measured (2026-11-27): "extend rejected: Exceeded 2 attempts ...",
// "after: key = null ; lock.expiration still in 134 ms".
const Redis = require('ioredis'), Redlock = require('redlock');
const port = +process.argv[2];
(async () => {
  const c = new Redis({ port, commandTimeout: 8, maxRetriesPerRequest: 0, enableReadyCheck: false });
  const admin = new Redis({ port });
  c.on('error', () => {}); 
  const rl = new Redlock([c], { retryCount: 2, retryDelay: 166, retryJitter: 0 });
  rl.on('clientError', () => {});
  const lock = await rl.lock('k', 500);
  console.log('acquired; key =', await admin.get('k'), 'pttl', await admin.pttl('k'), 'expiration in', lock.expiration - Date.now(), 'ms');
  admin.call('DEBUG', 'SLEEP', '0.03'); // the node stalls 30 ms: the extend's reply comes after commandTimeout (8 ms)
  await new Promise(r => setTimeout(r, 2));
  try { await lock.extend(500); console.log('extend ok'); }
  catch (e) { console.log('extend rejected:', e.message); }
  console.log('after: key =', await admin.get('k'), '; lock.expiration still in', lock.expiration - Date.now(), 'ms');
  process.exit(0);
})();
