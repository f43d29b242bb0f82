// npm simple-redis-mutex 3.0.0: the fencing token is taken by a separate
// INCR after the SET NX that grants the lock (dist/index.js 108-111, then
// 146), so tokens follow the order the INCRs arrive, not the order the
// lock was granted. Here client A's INCR reaches Redis late (a slow link,
// a GC or scheduler pause between the two awaits: emulated by delaying A's
// incr call 300 ms in a wrapper; nothing else is changed). A's lock
// (timeout 100 ms) expires, B is granted the lock and takes its token,
// then A's INCR lands: A, the stale holder, gets the larger token, and a
// resource that keeps the largest token seen rejects the current holder.
//   redis-server --port 6393 --save "" &
//   npm ci && node fencing-order.js 6393
//   node fencing-order.js 6393 fixed   # both clients take the lock with the
//                                      # suggested fix (SET NX PX and INCR in one script)
// Expected: B's token > A's token. Actual (3.0.0): A's token > B's.
const { createClient } = require('redis');
const { tryLock } = require('simple-redis-mutex');
const port = +process.argv[2] || 6379;
const sleep = ms => new Promise(r => setTimeout(r, ms));

function delayIncr(client, ms) { // A's INCR arrives ms late; every other call is untouched
  return new Proxy(client, {
    get(target, prop) {
      if (prop === 'incr') return async (...args) => { await sleep(ms); return target.incr(...args); };
      const v = target[prop];
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

const FIXED = process.argv.includes('fixed');
const ACQUIRE = 'if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return redis.call("INCR", KEYS[2]) end return 0';

// The suggested fix, outside the library: grant and token in one script.
// A's slowness stays where it was: 300 ms between the grant and what follows.
async function fixedTryLock(client, name, { timeout }, slowAfterGrantMs = 0) {
  const token = await client.eval(ACQUIRE, {
    keys: [`@simple-redis-mutex:lock-${name}`, '@simple-redis-mutex:fencing-tokens'],
    arguments: [String(Math.random()), String(timeout)],
  });
  if (slowAfterGrantMs) await sleep(slowAfterGrantMs);
  return [token !== 0, { fencingToken: token === 0 ? -1 : token, async release() {} }];
}

(async () => {
  const a = createClient({ socket: { port, host: '127.0.0.1' } }), b = a.duplicate(), admin = a.duplicate();
  await Promise.all([a.connect(), b.connect(), admin.connect()]);
  await admin.del('@simple-redis-mutex:lock-r');
  const t0 = Date.now(), ms = () => Date.now() - t0;
  const pa = FIXED ? fixedTryLock(a, 'r', { timeout: 100 }, 300) : tryLock(delayIncr(a, 300), 'r', { timeout: 100 });
  // Wait until A's SET has landed and A's key has expired, then B locks.
  for (let i = 0; i < 100 && (await admin.exists('@simple-redis-mutex:lock-r')) === 0; i++) await sleep(5);
  console.log(ms(), 'ms: A granted (its key exists); waiting for it to expire (timeout 100 ms)');
  for (let i = 0; i < 100 && (await admin.exists('@simple-redis-mutex:lock-r')) === 1; i++) await sleep(5);
  const [bOk, bRelease] = FIXED ? await fixedTryLock(b, 'r', { timeout: 10000 }) : await tryLock(b, 'r', { timeout: 10000 });
  console.log(ms(), 'ms: B tryLock ->', bOk, ', B token', bRelease.fencingToken);
  const [aOk, aRelease] = await pa;
  console.log(ms(), 'ms: A tryLock ->', aOk, ', A token', aRelease.fencingToken, '(A was granted first, and its lock has expired)');
  console.log('holder now: B =', (await admin.get('@simple-redis-mutex:lock-r')) !== null && bOk);
  if (!FIXED) await bRelease();
  else await admin.del('@simple-redis-mutex:lock-r');
  await Promise.all([a.quit(), b.quit(), admin.quit()]);
  if (aOk && bOk && aRelease.fencingToken > bRelease.fencingToken) {
    console.log('BUG: the stale holder A has the larger fencing token; a resource that keeps the largest token would refuse B, the holder');
    process.exit(1);
  }
  console.log('no bug seen');
  process.exit(0);
})().catch(e => { console.error(e); process.exit(2); });
