#!/usr/bin/python3
"""A driver for a lock library that never gives up, for internal/realarm/realredis's
tests: its lock() is redis-lock 1.0.0's, SET NX PX again every 20 ms until it
succeeds, with no timeout and no way to cancel it. The driver declares cancel
(docs/DRIVERS.md, "Libraries that never give up") and follows the pattern:

  - the library's call runs in a thread; the main loop reads stdin the while;
  - cancel answers the outstanding acquire at once: unknown, "cancelled";
  - the library's call keeps running: the next acquire waits for that same
    call, and one that gets the lock while no acquire is outstanding is
    released at once (nobody believes in it).

argv[1] says which clients' key a holder that crashed without a TTL keeps
forever ("all", or "all-but-c1": every client but c1): their acquire never
returns."""
import json, os, queue, sys, threading, time

import redis

STUCK = sys.argv[1]
CAD = "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"
events = queue.Queue()


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def conn(addr, name, timeout_ms):
    host, port = addr.rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), client_name=name, decode_responses=True, socket_timeout=timeout_ms and timeout_ms / 1000)


start = json.loads(sys.stdin.readline())
node = conn(start["nodes"][0], start["client"], start["timeout_ms"])
store = conn(start["storage"], start["client"], start["timeout_ms"])
key = start["key"]
if STUCK == "all" or STUCK.startswith("all-but-") and start["client"] != STUCK[len("all-but-"):]:
    key += ":held-forever"
    conn(start["nodes"][0], start["client"], None).set(key, "a holder that crashed, no TTL")  # no socket timeout: before the run


def reader():
    for line in sys.stdin:
        events.put(("request", json.loads(line)))
    events.put(("eof", None))


def lock(value):  # the library: no timeout, no cancel
    while True:
        try:
            if node.set(key, value, nx=True, px=start["ttl_ms"]):
                events.put(("locked", value))
                return
        except redis.RedisError:
            pass
        time.sleep(0.02)


threading.Thread(target=reader, daemon=True).start()
send({"re": "start", "result": "ok", "library": "never-gives-up (redis-lock 1.0.0's lock())", "cancel": True})
calling = False  # the library's lock() is running
waiting = False  # an acquire request is outstanding
while True:
    kind, msg = events.get()
    if kind == "eof":
        break
    if kind == "locked":
        calling = False
        if waiting:
            waiting = False
            send({"re": "acquire", "result": "ok", "value": msg})
        else:
            try:
                node.eval(CAD, 1, key, msg)  # an orphan: released at once
            except redis.RedisError:
                pass
        continue
    kind = msg["type"]
    if kind == "acquire":
        waiting = True
        if not calling:
            calling = True
            threading.Thread(target=lock, args=(os.urandom(8).hex(),), daemon=True).start()
    elif kind == "cancel":
        if waiting:  # else: its request was answered before it came
            waiting = False
            send({"re": "acquire", "result": "unknown", "error": "lock() still retrying: it never gives up"})
    elif kind == "release":
        try:
            send({"re": kind, "result": "ok" if node.eval(CAD, 1, key, msg["value"]) else "fail"})
        except redis.RedisError as e:
            send({"re": kind, "result": "unknown", "error": str(e)})
    elif kind in ("read", "write"):
        try:
            r = store.execute_command(*msg["command"])
            send({"re": kind, "result": "ok", "reply": [str(x) for x in r] if isinstance(r, list) else [str(r)]})
        except redis.ResponseError as e:
            send({"re": kind, "result": "fail" if str(e).startswith("FENCED") else "unknown", "error": str(e)})
        except redis.RedisError as e:
            send({"re": kind, "result": "unknown", "error": str(e)})
    elif kind == "stop":
        break
    else:
        send({"re": kind, "result": "fail", "error": "not supported"})
