// npm simple-redis-mutex 3.0.0: a Redis error inside lock() ends the node
// process; the caller's try/catch never sees it. lock() (dist/index.js
// 57-62) calls tryLock(...).then(...) with no catch, so a rejected
// tryLock (any failed SET, INCR or connect) is an unhandled rejection and
// the promise lock() returned never settles.
// Needs a throwaway redis-server (this script sets its maxmemory to make
// every write fail with OOM, then restores it):
//   redis-server --port 6393 --save "" &
//   npm ci && node process-exit.js 6393
// Expected: "caught: OOM command not allowed ...", the child exits 0.
// Actual (3.0.0): the child ends with status 1 on an unhandled rejection.
const { createClient } = require('redis');
const { lock } = require('simple-redis-mutex');
const { spawnSync } = require('child_process');
const port = +process.argv[2] || 6379;

async function child() {
  const redis = createClient({ socket: { port, host: '127.0.0.1' } });
  redis.on('error', () => {});
  await redis.connect();
  try {
    const release = await lock(redis, 'r', { timeout: 1000 });
    console.log('child: acquired (unexpected: writes fail)');
    await release();
  } catch (e) {
    console.log('child: caught:', e.message);
  }
  process.exit(0);
}

async function parent() {
  const admin = createClient({ socket: { port, host: '127.0.0.1' } });
  await admin.connect();
  const [, old] = await admin.configGet('maxmemory').then(r => ['maxmemory', r.maxmemory]);
  const [, oldPolicy] = await admin.configGet('maxmemory-policy').then(r => ['p', r['maxmemory-policy']]);
  await admin.configSet({ 'maxmemory-policy': 'noeviction', maxmemory: '1' }); // every write now fails: OOM
  let r;
  try {
    r = spawnSync(process.execPath, [__filename, String(port), 'child'], { encoding: 'utf8', timeout: 10000 });
  } finally {
    await admin.configSet({ maxmemory: old, 'maxmemory-policy': oldPolicy });
  }
  process.stdout.write(r.stdout);
  const lines = (r.stderr || '').split('\n');
  const firstErr = lines.find(l => /OOM/.test(l)) || lines.find(l => /Error/.test(l)) || '';
  console.log('child exit status:', r.status, firstErr ? '; its stderr: ' + firstErr.trim() : '');
  await admin.quit();
  if (r.status !== 0) {
    console.log('BUG: a Redis error inside lock() ended the process; the caller\'s try/catch never ran');
    process.exit(1);
  }
  console.log('no bug seen');
}

(process.argv[3] === 'child' ? child : parent)().catch(e => { console.error(e); process.exit(2); });
