// npm redis-lock 1.0.0: the release function deletes the key with a plain
// DEL when the holder's own clock says the lock has not expired yet
// (index.js 41-45: `if (lockTimeoutValue > Date.now()) return
// client.del(lockName)`); the key's value is never compared. A holder
// whose clock runs slow (here at half speed: Date.now is slowed in the
// holder's process only, as a stepped-back or slewed clock would be)
// releases after its key has expired and another client has taken it, and
// deletes that client's lock; a third client then takes the lock while
// the second still holds it.
//   redis-server --port 6394 --save "" &
//   npm ci && node repro.js 6394
//   node repro.js 6394 fixed   # A releases with the suggested fix instead
//                              # (compare-and-delete by a per-acquisition token)
// Expected: B's key survives A's late release; C waits for B.
// Actual (1.0.0): A's release deletes B's key; C is granted while B holds.
const { createClient } = require('redis');
const redisLock = require('redis-lock');
const { spawn } = require('child_process');
const port = +process.argv[2] || 6379;
const sleep = ms => new Promise(r => setTimeout(r, ms));

const FIXED = process.argv.includes('fixed');

// The suggested fix, outside the library: the same SET NX PX, a value
// unique to this acquisition, and a release that deletes only that value.
function fixedLock(client) {
  const RELEASE = 'if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0';
  return async (name, timeout) => {
    const key = `lock.${name}`, token = `${Date.now() + timeout + 1}:${Math.random()}`;
    for (;;) {
      if (await client.set(key, token, { PX: timeout, NX: true }) !== null) break;
      await sleep(50);
    }
    return () => client.eval(RELEASE, { keys: [key], arguments: [token] });
  };
}

async function holderA() { // a process whose clock runs at half speed
  const real = Date.now, start = real();
  Date.now = () => start + Math.floor((real() - start) / 2);
  const c = createClient({ socket: { port, host: '127.0.0.1' } });
  await c.connect();
  const lock = FIXED ? fixedLock(c) : redisLock(c);
  const release = await lock('r', 400); // the key lives 400 ms
  console.log('A: acquired (timeout 400 ms)');
  await sleep(650);                      // real time; A's clock says 325 ms
  const r = await release();
  console.log(FIXED ? 'A (fixed release):' : 'A:', 'released after 650 ms real time (its clock: ~325 ms, under the 400 ms timeout); DEL returned', r);
  await c.quit();
}

async function main() {
  const b = createClient({ socket: { port, host: '127.0.0.1' } }), c = b.duplicate(), admin = b.duplicate();
  await Promise.all([b.connect(), c.connect(), admin.connect()]);
  await admin.del('lock.r');
  const child = spawn(process.execPath, [__filename, String(port), 'A', ...(FIXED ? ['fixed'] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  const aDone = new Promise(r => child.on('exit', r));
  await new Promise(r => child.stdout.on('data', d => { process.stdout.write(d); if (/acquired/.test(d)) r(); }));
  await redisLock(b)('r', 5000);         // retries every 50 ms until A's key expires
  const bValue = await admin.get('lock.r');
  console.log('B: acquired after A\'s key expired (timeout 5000 ms); key =', bValue);
  await aDone;
  const after = await admin.get('lock.r');
  console.log('after A\'s release: key =', after);
  const cGot = await Promise.race([redisLock(c)('r', 5000).then(() => true), sleep(300).then(() => false)]);
  console.log('C granted within 300 ms while B still holds:', cGot);
  await Promise.all([b.quit(), c.quit(), admin.quit()]).catch(() => {});
  if (after === null || after !== bValue) {
    console.log('BUG: A\'s release, guarded only by A\'s slow clock, deleted B\'s lock');
    process.exit(1);
  }
  console.log('no bug seen');
  process.exit(0);
}

(process.argv[3] === 'A' ? holderA : main)().catch(e => { console.error(e); process.exit(2); });
