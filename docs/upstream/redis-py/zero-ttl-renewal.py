"""redis-py Lock: a renewal to a non-positive TTL deletes the key and
returns True (redis/redis-py issue #4279; PR #4282 open).

reacquire() refuses only timeout None (lock.py 296-297 in 4.3.4), so a
Lock(timeout=0) (held until release: SET NX without PX) reaches
LUA_REACQUIRE_SCRIPT (67-74), whose PEXPIRE key 0 deletes the key; the
script still returns 1. extend() with a negative additional time on a
timed lock does the same through LUA_EXTEND_SCRIPT (42-61).

    redis-server --port 6396 --save "" &
    /usr/bin/python3 zero-ttl-renewal.py 6396

Debian bookworm's python3-redis 4.3.4-3. Exits 1 when a renewal that
returned True left no key.
"""
import sys

import redis

r = redis.Redis(port=int(sys.argv[1]) if len(sys.argv) > 1 else 6379)
r.delete('zero-ttl-l0', 'zero-ttl-l1')
bug = False

l0 = r.lock('zero-ttl-l0', timeout=0)
print('Lock(timeout=0).acquire ->', l0.acquire(blocking=False), '; pttl', r.pttl('zero-ttl-l0'))
ok = l0.reacquire()
print('reacquire() ->', ok, '; key exists after:', bool(r.exists('zero-ttl-l0')))
bug |= ok and not r.exists('zero-ttl-l0')

l1 = r.lock('zero-ttl-l1', timeout=10)
print('Lock(timeout=10).acquire ->', l1.acquire(blocking=False), '; pttl', r.pttl('zero-ttl-l1'))
ok = l1.extend(-20)
print('extend(-20) ->', ok, '; key exists after:', bool(r.exists('zero-ttl-l1')))
bug |= ok and not r.exists('zero-ttl-l1')

print('redis-py', redis.__version__)
if bug:
    print('BUG: a renewal returned True and deleted the lock')
    sys.exit(1)
print('no bug seen')
