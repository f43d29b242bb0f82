// npm redis-semaphore 5.8.0: what a SIGSTOP past lockTimeout does to a
// held Mutex with auto-refresh on (the library's default). The whole
// process stops, its refresh interval (lib/Lock.js 112-115) included; the
// key expires and another client takes it; at SIGCONT the overdue refresh
// finds another value (mutex/refresh.js 16-23: 0), and onLockLost runs
// (Lock.js 61-69). Nothing else tells the holder. Not a driver. Run
// against a throwaway redis-server:
//   redis-server --port 6393 --save "" &
//   node sigstop-onlocklost.js 6393
const Redis = require('ioredis'), { Mutex } = require('redis-semaphore');
const { execFileSync } = require('child_process');
const port = +process.argv[2];
(async () => {
  const c = new Redis({ port, enableReadyCheck: false }), other = new Redis({ port });
  const m = new Mutex(c, 'k', { lockTimeout: 500, onLockLost: e => console.log(Date.now() - t0, 'ms: onLockLost:', e.message, '; isAcquired', m.isAcquired) });
  const t0 = Date.now();
  await m.tryAcquire();
  console.log(Date.now() - t0, 'ms: acquired, refresh every 400 ms; SIGSTOP for 750 ms (a shell stops and resumes this process)');
  // A separate process stops this one and, while it is stopped, takes the
  // expired key as another client would, then resumes it.
  execFileSync('sh', ['-c', `(kill -STOP ${process.pid}; sleep 0.6; redis-cli -p ${port} set mutex:k other NX PX 500 >/dev/null; sleep 0.15; kill -CONT ${process.pid}) &`]);
  await new Promise(r => setTimeout(r, 50));
  console.log(Date.now() - t0, 'ms: resumed; isAcquired', m.isAcquired, '; key', await other.get('mutex:k'));
  await new Promise(r => setTimeout(r, 100));
  console.log(Date.now() - t0, 'ms: isAcquired', m.isAcquired);
  await m.release(); // sends nothing once isAcquired is false (Lock.js 149)
  console.log(Date.now() - t0, 'ms: released; key', await other.get('mutex:k'));
  process.exit(0);
})();
