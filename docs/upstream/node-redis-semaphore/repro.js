// npm redis-semaphore 5.8.0: a background refresh whose command fails
// ends the node process, whatever onLockLost is. Lock.js 52-75
// (_processRefresh) awaits this._refresh() in a try/finally with no catch,
// and setInterval (Lock.js 113) drops the promise it returns, so the
// rejection is unhandled: node >= 15 exits with status 1.
// Needs a throwaway redis-server that allows DEBUG (to stall it 600 ms):
//   redis-server --port 6392 --save "" --enable-debug-command yes &
//   npm ci && node repro.js 6392; echo "exit status $?"
//   node repro.js 6392 fixed   # the refresh's rejection caught (the suggested fix,
//                              # applied by wrapping the instance's _processRefresh)
// Expected: onLockLost (or nothing, if the refresh succeeds late) and the
// process alive at 2 s ("alive at 2 s", exit 0). Actual (5.8.0): the
// process ends at about 1.1 s with "Command timed out", exit status 1.
const Redis = require('ioredis'), { Mutex } = require('redis-semaphore');
const port = +process.argv[2] || 6379;
const t0 = Date.now(), ms = () => Date.now() - t0;
(async () => {
  // The refresh's command times out after 300 ms; any Redis error would do
  // (a dropped connection, a failover's READONLY, a cluster MOVED storm).
  const c = new Redis({ port, host: '127.0.0.1', commandTimeout: 300, maxRetriesPerRequest: 0, enableReadyCheck: false });
  const admin = new Redis({ port, host: '127.0.0.1' });
  c.on('error', () => {});
  const m = new Mutex(c, 'k', { lockTimeout: 1000, onLockLost: e => console.log(ms(), 'ms: onLockLost:', e.message) });
  if (process.argv.includes('fixed')) {
    const refresh = m._processRefresh; // Lock.js 52: an instance arrow function, used by _startRefresh
    m._processRefresh = () => refresh().catch(e => console.log(ms(), 'ms: refresh failed, caught:', e.message));
  }
  await m.tryAcquire();
  console.log(ms(), 'ms: acquired; pttl', await admin.pttl('mutex:k'), '; the library refreshes every 800 ms');
  process.on('exit', code => console.log(ms(), 'ms: process exits with code', code, '; isAcquired', m.isAcquired));
  setTimeout(() => { console.log(ms(), 'ms: the server stalls 600 ms'); admin.call('DEBUG', 'SLEEP', '0.6'); }, 700);
  setTimeout(() => { console.log(ms(), 'ms: alive at 2 s; isAcquired', m.isAcquired); process.exit(0); }, 2000);
})();
