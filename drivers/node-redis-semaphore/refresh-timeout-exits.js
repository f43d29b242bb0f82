// npm redis-semaphore 5.8.0: a background refresh whose command fails
// (here ioredis's commandTimeout) ends the node process, whatever
// onLockLost is: _processRefresh (lib/Lock.js 52-75) awaits _refresh in a
// try/finally with no catch, and setInterval (Lock.js 113) drops the
// promise, so the rejection is unhandled (node 20: exit status 1).
// Not a driver (the harness runs driver* files only). Run against a
// throwaway redis-server that allows DEBUG:
//   redis-server --port 6392 --save "" --enable-debug-command yes &
//   node refresh-timeout-exits.js 6392; echo "exit status $?"
const Redis = require('ioredis'), { Mutex } = require('redis-semaphore');
const port = +process.argv[2];
(async () => {
  const c = new Redis({ port, commandTimeout: 20, maxRetriesPerRequest: 0, enableReadyCheck: false });
  const admin = new Redis({ port });
  c.on('error', () => {});
  const m = new Mutex(c, 'k', { lockTimeout: 500, onLockLost: e => console.log('onLockLost:', e.message) });
  await m.tryAcquire();
  console.log('acquired; pttl', await admin.pttl('mutex:k'), '; refresh every 400 ms');
  setTimeout(() => admin.call('DEBUG', 'SLEEP', '0.1'), 390); // the node stalls 100 ms across the refresh at 400 ms
  process.on('exit', code => console.log('process exits, code', code, 'at', Date.now() - t0, 'ms; isAcquired', m.isAcquired));
  const t0 = Date.now();
  setTimeout(() => { console.log('still alive at 1 s; isAcquired', m.isAcquired); process.exit(0); }, 1000);
})();
