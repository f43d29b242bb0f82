#!/usr/bin/python3
"""locksim driver (docs/DRIVERS.md): redis-py's redis.lock.Lock as
documented: r.lock(key, timeout=, blocking_timeout=), acquire(), release(),
extend(), on one node or on the primary Sentinel names (master_for). It gives no validity signal (the holder believes until it
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

def primary(start, **kw):
    """The lock's Redis: the one node, or in a Sentinel world the primary
    through redis.sentinel.Sentinel(...).master_for(name), each connection
    dialled at this client's route to the node Sentinel names (start's
    "routes": the run's per-link proxies)."""
    if not start.get("sentinels"):
        host, port = start["nodes"][0].rsplit(":", 1)
        return redis.Redis(host=host, port=int(port), **kw)
    from redis.sentinel import Sentinel, SentinelManagedConnection
    routes = start.get("routes") or {}
    class Routed(SentinelManagedConnection):
        def _connect(self):  # dial the route, keep the name (the pool compares it)
            named = (self.host, self.port)
            route = routes.get("%s:%s" % named)
            if route is None:
                raise redis.ConnectionError("no route to %s:%s (start's routes)" % named)
            host, port = route.rsplit(":", 1)
            self.host, self.port = host, int(port)
            try:
                return super()._connect()
            finally:
                self.host, self.port = named
    sentinels = [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for a in start["sentinels"]]
    t = {k: v for k, v in kw.items() if k.startswith("socket_")}
    return Sentinel(sentinels, sentinel_kwargs=t).master_for(start["master_name"], connection_class=Routed, **kw)

def main():
    start = json.loads(sys.stdin.readline())
    if not start.get("sentinels") and len(start.get("nodes") or []) != 1:  # a single-node design: refuse a world of several
        send({"re": "start", "result": "fail", "error": "this driver runs against one node or a Sentinel-managed primary; the world has %d independent nodes" % len(start.get("nodes") or [])})
        return
    t = start["timeout_ms"] / 1000
    r = primary(start, socket_timeout=t, socket_connect_timeout=t, client_name=start["client"])
    host, port = start["storage"].rsplit(":", 1)
    store = redis.Redis(host=host, port=int(port), socket_timeout=t, socket_connect_timeout=t, client_name=start["client"], decode_responses=True)
    ttl = start["ttl_ms"] / 1000
    wait = (start["tries"] - 1) * start["retry_ms"] / 1000  # as long as set-nx-cad keeps trying
    send({"re": "start", "result": "ok", "library": "redis-py %s redis.lock.Lock" % redis.__version__, "renew": True})
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
            elif kind == "renew":  # Lock.extend (lock.py 261-288): True, or LockNotOwnedError (fail), or a RedisError (unknown)
                point("renewing")
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
