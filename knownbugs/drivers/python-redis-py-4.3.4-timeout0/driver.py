#!/usr/bin/python3
"""locksim driver (docs/DRIVERS.md): redis-py 4.3.4's redis.lock.Lock
(Debian python3-redis) held until released, Lock(timeout=0), with the
renewal a heartbeat gives every lock it holds: reacquire(), "Resets a TTL of
an already acquired lock back to a timeout value" (lock.py 290-298). This is
the use redis-py issue #4279 reports (knownbugs/bugs/redis-py-zero-ttl-renewal-deletes.yaml,
redis-py-zero-ttl-renewal-deletes). One node; no validity signal (a lock
without expiry: the holder believes until it releases); no fencing token.

With REDIS_PY_TWIN=fixed (knownbugs/drivers/python-redis-py-4.3.4-timeout0-fixed)
the fix of redis-py PR #4282, as its review describes it, is applied at
load time: LUA_REACQUIRE_SCRIPT and LUA_EXTEND_SCRIPT (lock.py 42-74) get a
guard, a new time that is not positive leaves the key as it is (no PEXPIRE)
and still returns 1 for the owner: the persistent lock is kept. Nothing else
changes."""
import json, os, sys
import redis
from redis.lock import Lock

FIXED = os.environ.get("REDIS_PY_TWIN") == "fixed"
if FIXED:  # before any Lock registers its scripts (lock.py 147-155)
    Lock.LUA_EXTEND_SCRIPT = """
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        local expiration = redis.call('pttl', KEYS[1])
        if not expiration then
            expiration = 0
        end
        if expiration < 0 then
            return 0
        end

        local newttl = ARGV[2]
        if ARGV[3] == "0" then
            newttl = ARGV[2] + expiration
        end
        if tonumber(newttl) <= 0 then
            return 1
        end
        redis.call('pexpire', KEYS[1], newttl)
        return 1
    """
    Lock.LUA_REACQUIRE_SCRIPT = """
        local token = redis.call('get', KEYS[1])
        if not token or token ~= ARGV[1] then
            return 0
        end
        if tonumber(ARGV[2]) <= 0 then
            return 1
        end
        redis.call('pexpire', KEYS[1], ARGV[2])
        return 1
    """

def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()

def point(name):  # a pause point: say it, wait for the harness's continue
    send({"point": name})
    if json.loads(sys.stdin.readline()).get("type") != "continue":
        sys.exit("expected continue")

def main():
    start = json.loads(sys.stdin.readline())
    if start.get("sentinels") or len(start.get("nodes") or []) != 1:
        send({"re": "start", "result": "fail", "error": "this driver runs against one Redis node; the world has %d nodes%s" % (len(start.get("nodes") or []), " and Sentinels" if start.get("sentinels") else "")})
        return
    if redis.__version__ != "4.3.4":
        # The entry measures 4.3.4 (Debian bookworm's); another version is
        # another measurement.
        send({"re": "start", "result": "fail", "error": "redis-py %s installed; this driver pins 4.3.4 (Debian bookworm's python3-redis)" % redis.__version__})
        return
    t = start["timeout_ms"] / 1000
    host, port = start["nodes"][0].rsplit(":", 1)
    r = redis.Redis(host=host, port=int(port), socket_timeout=t, socket_connect_timeout=t, client_name=start["client"])
    sh, sp = start["storage"].rsplit(":", 1)
    store = redis.Redis(host=sh, port=int(sp), socket_timeout=t, socket_connect_timeout=t, client_name=start["client"], decode_responses=True)
    wait = (start["tries"] - 1) * start["retry_ms"] / 1000  # as long as set-nx-cad keeps trying
    send({"re": "start", "result": "ok", "renew": True,
          "library": "redis-py %s redis.lock.Lock(timeout=0) + reacquire()%s" % (redis.__version__, " + PR #4282's guard (twin)" if FIXED else "")})
    held = {}  # lease value -> Lock
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        if kind == "stop":
            return
        try:
            if kind == "acquire":
                lock = r.lock(start["key"], timeout=0, blocking_timeout=wait)  # held until release(): SET NX, no PX (lock.py 217-225)
                orig = lock.do_acquire
                def do_acquire(token, orig=orig):  # the library has no hook: mark the point after its SET
                    ok = orig(token)
                    point("acquiring")
                    return ok
                lock.do_acquire = do_acquire
                if lock.acquire():
                    point("after-check")
                    value = lock.local.token.decode()
                    held[value] = lock
                    send({"re": kind, "result": "ok", "value": value})  # no validity: no expiry
                else:
                    send({"re": kind, "result": "fail", "error": "not acquired within blocking_timeout"})
            elif kind == "release":
                held.pop(req["value"]).release()
                send({"re": kind, "result": "ok"})
            elif kind == "renew":  # reacquire(): True, or LockNotOwnedError (fail), or a RedisError (unknown)
                point("renewing")
                ok = held[req["value"]].reacquire()
                send({"re": kind, "result": "ok" if ok else "fail"})  # no validity, as acquire
            elif kind in ("read", "write"):
                res = store.execute_command(*req["command"])
                send({"re": kind, "result": "ok", "reply": res if isinstance(res, list) else [str(res)]})
            else:
                send({"re": kind, "result": "fail", "error": "not supported"})
        except redis.exceptions.LockNotOwnedError as e:
            send({"re": kind, "result": "fail", "error": str(e)})
        except redis.ResponseError as e:
            send({"re": kind, "result": "fail", "error": str(e)})
        except (redis.RedisError, redis.exceptions.LockError) as e:
            send({"re": kind, "result": "unknown", "error": "%s: %s" % (type(e).__name__, e)})

main()
