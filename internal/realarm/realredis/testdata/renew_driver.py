#!/usr/bin/python3
"""A fake driver for internal/realarm/realredis's renewal tests: SET NX PX with a
validity (time.time() before the SET + TTL) like the control, and a renew
whose reply is argv[1]'s: "ok" (compare-and-PEXPIRE, the new validity
time.time() before it + TTL) or "fail" (refused, without a round trip).
Each renew request it gets is appended to $LOCKSIM_TEST_RENEW_LOG."""
import json, os, sys, time
import redis

MODE = sys.argv[1]
CAD = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
CPE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end"

def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()

def conn(addr, start):
    host, port = addr.rsplit(":", 1)
    t = start["timeout_ms"] / 1000
    return redis.Redis(host=host, port=int(port), socket_timeout=t, client_name=start["client"], decode_responses=True)

start = json.loads(sys.stdin.readline())
node, store, key, ttl = conn(start["nodes"][0], start), conn(start["storage"], start), start["key"], start["ttl_ms"]
send({"re": "start", "result": "ok", "library": "fake renewals (%s)" % MODE, "renew": True})
for line in sys.stdin:
    req = json.loads(line)
    kind = req["type"]
    try:
        if kind == "acquire":
            value, began = os.urandom(8).hex(), time.time()
            if node.set(key, value, nx=True, px=ttl):
                send({"re": kind, "result": "ok", "value": value, "valid_until_ms": began * 1000 + ttl})
            else:
                send({"re": kind, "result": "fail", "error": "not acquired"})
        elif kind == "renew":
            with open(os.environ["LOCKSIM_TEST_RENEW_LOG"], "a") as f:
                f.write(req["value"] + "\n")
            sent = time.time()
            if MODE == "ok" and node.eval(CPE, 1, key, req["value"], ttl):
                send({"re": kind, "result": "ok", "valid_until_ms": sent * 1000 + ttl})
            else:
                send({"re": kind, "result": "fail", "error": "refused (%s)" % MODE})
        elif kind == "release":
            n = node.eval(CAD, 1, key, req["value"])
            send({"re": kind, "result": "ok" if n else "fail"})
        elif kind in ("read", "write"):
            r = store.execute_command(*req["command"])
            send({"re": kind, "result": "ok", "reply": r if isinstance(r, list) else [str(r)]})
        elif kind == "stop":
            break
    except redis.ResponseError as e:
        send({"re": kind, "result": "fail", "error": str(e)})
    except redis.RedisError as e:
        send({"re": kind, "result": "unknown", "error": str(e)})
