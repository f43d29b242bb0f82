#!/usr/bin/python3
"""locksim driver (docs/DRIVERS.md): the fencing design in plain redis-py,
following locks/catalogue/fenced.go's Fenced.Acquire line by line: SET NX
PX and, on success, INCR of "<key>:token" on the same node, in one Lua
script (Redisson RFencedLock's layout), run as go-redis's Script.Run runs
it (EVALSHA, EVAL on NOSCRIPT: redis-py's register_script); set-nx-cad's
tries, retry delay, validity and compare-and-delete release. Its acquire
gives the token: in fencing's world the harness builds the storage
commands with it (a fenced control for the Go fencing design)."""
import json, os, sys, time
import redis

# fenced.go fencedAcquire
FENCED_ACQUIRE = "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('incr', KEYS[2]) else return 0 end"
# setnxcad.go CompareAndDelete
CAD = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"

def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()

def point(name):  # a pause point: say it, wait for the harness's continue
    send({"point": name})
    if json.loads(sys.stdin.readline()).get("type") != "continue":
        sys.exit("expected continue")

def conn(addr, start):
    host, port = addr.rsplit(":", 1)
    t = start["timeout_ms"] / 1000
    return redis.Redis(host=host, port=int(port), socket_timeout=t, socket_connect_timeout=t, client_name=start["client"], decode_responses=True)

def main():
    start = json.loads(sys.stdin.readline())
    if start.get("sentinels") or len(start.get("nodes") or []) != 1:  # fencing's topology: one node
        send({"re": "start", "result": "fail", "error": "this driver runs against one node (the fencing design's world); the world has %d nodes%s" % (len(start.get("nodes") or []), " and Sentinels" if start.get("sentinels") else "")})
        return
    node, store = conn(start["nodes"][0], start), conn(start["storage"], start)
    acquire_script, release_script = node.register_script(FENCED_ACQUIRE), node.register_script(CAD)
    key, ttl, tries, retry = start["key"], start["ttl_ms"], start["tries"], start["retry_ms"] / 1000
    send({"re": "start", "result": "ok", "library": "redis-py %s (the fencing design: SET NX PX + INCR in one script)" % redis.__version__})
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        if kind == "stop":
            return
        try:
            if kind == "acquire":  # fenced.go Acquire
                value, last = os.urandom(16).hex(), None
                for i in range(max(1, tries)):
                    if i > 0:
                        time.sleep(retry)
                    began = time.time()
                    try:
                        tok = acquire_script(keys=[key, key + ":token"], args=[value, ttl])
                    except redis.RedisError as e:
                        point("acquiring")
                        last = e
                        continue
                    point("acquiring")
                    if tok > 0:
                        point("after-check")
                        send({"re": kind, "result": "ok", "value": value, "valid_until_ms": began * 1000 + ttl, "token": tok})
                        break
                    last = None
                else:
                    send({"re": kind, "result": "unknown" if last else "fail", "error": "%s: %s" % (type(last).__name__, last) if last else "not acquired"})
            elif kind == "release":  # setnxcad.go Release
                n = release_script(keys=[key], args=[req["value"]])
                send({"re": kind, "result": "ok" if n else "fail", "error": "" if n else "not the owner"})
            elif kind in ("read", "write"):  # the harness's fenced command, sent as is
                r = store.execute_command(*req["command"])
                send({"re": kind, "result": "ok", "reply": r if isinstance(r, list) else [str(r)]})
            else:
                send({"re": kind, "result": "fail", "error": "not supported"})
        except redis.ResponseError as e:
            send({"re": kind, "result": "fail", "error": str(e)})
        except redis.RedisError as e:
            send({"re": kind, "result": "unknown", "error": "%s: %s" % (type(e).__name__, e)})

main()
