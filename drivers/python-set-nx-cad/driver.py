#!/usr/bin/python3
"""locksim driver (docs/DRIVERS.md): SET NX PX + Lua compare-and-delete in
plain redis-py, the same commands and tries as locks/catalogue's set-nx-cad
(the control: its verdicts must match the Go design's); in a Sentinel
world on the primary master_for names, as primary-replica. Its renewal is
the Go watchdog's compare-and-PEXPIRE (in watchdog's world)."""
import json, os, sys, time
import redis

CAD = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
# the watchdog's renewal (locks/catalogue/watchdog.go CompareAndPExpire)
CPE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"

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
    node = primary(start, socket_timeout=t, socket_connect_timeout=t, client_name=start["client"], decode_responses=True)
    host, port = start["storage"].rsplit(":", 1)
    store = redis.Redis(host=host, port=int(port), socket_timeout=t, socket_connect_timeout=t, client_name=start["client"], decode_responses=True)
    key, ttl, tries, retry = start["key"], start["ttl_ms"], start["tries"], start["retry_ms"] / 1000
    send({"re": "start", "result": "ok", "library": "redis-py %s (plain SET NX PX)" % redis.__version__, "renew": True})
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        if kind == "stop":
            return
        try:
            if kind == "acquire":
                value, last = os.urandom(16).hex(), None
                for i in range(max(1, tries)):
                    if i > 0:
                        time.sleep(retry)
                    began = time.time()
                    try:
                        ok = node.set(key, value, nx=True, px=ttl)
                    except redis.RedisError as e:
                        point("acquiring")
                        last = e
                        continue
                    point("acquiring")
                    if ok:
                        point("after-check")
                        send({"re": kind, "result": "ok", "value": value, "valid_until_ms": began * 1000 + ttl})
                        break
                    last = None
                else:
                    send({"re": kind, "result": "unknown" if last else "fail", "error": str(last) if last else "not acquired"})
            elif kind == "release":
                n = node.eval(CAD, 1, key, req["value"])
                send({"re": kind, "result": "ok" if n else "fail", "error": "" if n else "not the owner"})
            elif kind == "renew":  # as the Go watchdog: the renewing point, the time, then compare-and-PEXPIRE
                point("renewing")
                sent = time.time()
                n = node.eval(CPE, 1, key, req["value"], ttl)
                if n:
                    send({"re": kind, "result": "ok", "valid_until_ms": sent * 1000 + ttl})
                else:
                    send({"re": kind, "result": "fail", "error": "not the owner"})
            elif kind in ("read", "write"):
                r = store.execute_command(*req["command"])
                send({"re": kind, "result": "ok", "reply": r if isinstance(r, list) else [str(r)]})
            else:
                send({"re": kind, "result": "fail", "error": "not supported"})
        except redis.ResponseError as e:
            send({"re": kind, "result": "fail", "error": str(e)})
        except redis.RedisError as e:
            send({"re": kind, "result": "unknown", "error": "%s: %s" % (type(e).__name__, e)})

main()
