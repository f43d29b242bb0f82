#!/usr/bin/python3
"""A hostile driver for internal/realredis's tests (issue 41), standard
library only: it locks nothing (every acquire is granted, so the clients'
sections overlap) and misbehaves as argv[1] says:

  far-validity   every acquire and renew ok with valid_until_ms 1e14
  seconds        every acquire ok with valid_until_ms in seconds (a unit slip)
  renew-hangs    declares renew, never answers a renew request
  third-sleeps   the third acquire is never answered
  flood          at the first acquire, writes pause points forever and
                 reads nothing more of its stdin

Reads and writes of the storage are refused (fail) after TTL/2: the
sections' beliefs are what these tests look at."""
import json, os, sys, time

MODE = sys.argv[1]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def hang():
    while True:
        time.sleep(1000)


start = json.loads(sys.stdin.readline())
ttl = start["ttl_ms"]
send({"re": "start", "result": "ok", "library": "hostile (%s)" % MODE, "renew": MODE in ("renew-hangs", "far-validity")})
acquires = 0
for line in sys.stdin:
    kind = json.loads(line)["type"]
    if kind == "acquire":
        acquires += 1
        if MODE == "third-sleeps" and acquires == 3:
            hang()
        if MODE == "flood":
            while True:
                send({"point": "acquiring"})
        reply = {"re": kind, "result": "ok", "value": os.urandom(8).hex()}
        if MODE == "far-validity":
            reply["valid_until_ms"] = 1e14
        elif MODE == "seconds":
            reply["valid_until_ms"] = time.time() + ttl / 1000
        else:
            reply["valid_until_ms"] = time.time() * 1000 + ttl
        send(reply)
    elif kind == "renew":
        if MODE == "renew-hangs":
            hang()
        send({"re": kind, "result": "ok", "valid_until_ms": 1e14 if MODE == "far-validity" else time.time() * 1000 + ttl})
    elif kind == "release":
        send({"re": kind, "result": "ok"})
    elif kind in ("read", "write"):
        time.sleep(ttl / 2000)  # a section's length, so the holds overlap
        send({"re": kind, "result": "fail", "error": "no storage in this driver"})
    elif kind == "stop":
        break
