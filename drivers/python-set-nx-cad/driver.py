#!/usr/bin/python3
"""locksim driver (docs/DRIVERS.md): SET NX PX + Lua compare-and-delete in
plain redis-py, the same commands and tries as locks/catalogue's set-nx-cad
(the control: its verdicts must match the Go design's)."""
import json, os, sys, time
import redis

CAD = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

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
    node = redis.Redis(host=host, port=int(port), socket_timeout=t, socket_connect_timeout=t, client_name=start["client"], decode_responses=True)
    host, port = start["storage"].rsplit(":", 1)
    store = redis.Redis(host=host, port=int(port), socket_timeout=t, socket_connect_timeout=t, client_name=start["client"], decode_responses=True)
    key, ttl, tries, retry = start["key"], start["ttl_ms"], start["tries"], start["retry_ms"] / 1000
    send({"re": "start", "result": "ok", "library": "redis-py %s (plain SET NX PX)" % redis.__version__})
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
