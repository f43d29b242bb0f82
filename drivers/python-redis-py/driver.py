#!/usr/bin/python3
"""locksim driver (docs/DRIVERS.md): redis-py's redis.lock.Lock as
documented: r.lock(key, timeout=, blocking_timeout=), acquire(), release(),
extend(). It gives no validity signal (the holder believes until it
releases) and no fencing token."""
import json, sys
import redis

def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()

def point(name):  # a pause point: say it, wait for the harness's continue
    send({"point": name})
    if json.loads(sys.stdin.readline()).get("type") != "continue":
        sys.exit("expected continue")

def main():
    start = json.loads(sys.stdin.readline())
    if len(start["nodes"]) != 1:  # a single-node design: refuse a world of several
        send({"re": "start", "result": "fail", "error": "this driver runs against one node; the world has %d" % len(start["nodes"])})
        return
    t = start["timeout_ms"] / 1000
    host, port = start["nodes"][0].rsplit(":", 1)
    r = redis.Redis(host=host, port=int(port), socket_timeout=t, socket_connect_timeout=t, client_name=start["client"])
    host, port = start["storage"].rsplit(":", 1)
    store = redis.Redis(host=host, port=int(port), socket_timeout=t, socket_connect_timeout=t, client_name=start["client"], decode_responses=True)
    ttl = start["ttl_ms"] / 1000
    wait = (start["tries"] - 1) * start["retry_ms"] / 1000  # as long as set-nx-cad keeps trying
    send({"re": "start", "result": "ok", "library": "redis-py %s redis.lock.Lock" % redis.__version__})
    held = {}  # lease value -> Lock
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        if kind == "stop":
            return
        try:
            if kind == "acquire":
                lock = r.lock(start["key"], timeout=ttl, blocking_timeout=wait)
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
                    send({"re": kind, "result": "ok", "value": value})  # no validity_ms: no signal
                else:
                    send({"re": kind, "result": "fail", "error": "not acquired within blocking_timeout"})
            elif kind == "release":
                held.pop(req["value"]).release()
                send({"re": kind, "result": "ok"})
            elif kind == "renew":
                ok = held[req["value"]].extend(ttl, replace_ttl=True)
                send({"re": kind, "result": "ok" if ok else "fail"})
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
