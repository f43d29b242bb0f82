#!/usr/bin/python3
"""A fake driver for internal/realarm/realredis's TestDriverDiesHolding: SET NX PX
with no validity (the holder believes until it releases), and client c0's
process exits at its first write request, while it holds. The others run
on normally."""
import json, os, sys
import redis

CAD = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()

def conn(addr, start):
    host, port = addr.rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), socket_timeout=start["timeout_ms"] / 1000,
                       client_name=start["client"], decode_responses=True)

start = json.loads(sys.stdin.readline())
node, store, key, ttl = conn(start["nodes"][0], start), conn(start["storage"], start), start["key"], start["ttl_ms"]
send({"re": "start", "result": "ok", "library": "fake: c0 dies holding"})
for line in sys.stdin:
    req = json.loads(line)
    kind = req["type"]
    try:
        if kind == "acquire":
            value = os.urandom(8).hex()
            if node.set(key, value, nx=True, px=ttl):
                send({"re": kind, "result": "ok", "value": value})
            else:
                send({"re": kind, "result": "fail", "error": "not acquired"})
        elif kind == "release":
            send({"re": kind, "result": "ok" if node.eval(CAD, 1, key, req["value"]) else "fail"})
        elif kind == "write" and start["client"] == "c0":
            sys.exit(7)  # dies holding: its key expires by itself
        elif kind in ("read", "write"):
            r = store.execute_command(*req["command"])
            send({"re": kind, "result": "ok", "reply": r if isinstance(r, list) else [str(r)]})
        elif kind == "stop":
            break
        else:
            send({"re": kind, "result": "fail", "error": "not supported"})
    except redis.RedisError as e:
        send({"re": kind, "result": "unknown", "error": str(e)})
