#!/usr/bin/python3
"""A hostile driver for internal/realarm/realredis's tests, standard
library only. In modes far-validity and seconds it locks nothing (every
acquire is granted, so the clients' sections overlap); in the others it
locks a file (flock, shared by the run's drivers: a belief until release,
so nothing overlaps) and hangs. argv[1]:

  far-validity   every acquire and renew ok with valid_until_ms 1e14
  seconds        every acquire ok with valid_until_ms in seconds (a unit slip)
  renew-hangs    declares renew, never answers a renew request
  third-sleeps   the third acquire is never answered
  flood          at the first acquire, writes pause points forever and
                 reads nothing more of its stdin

Reads and writes of the storage are refused (fail) after TTL/2: the
sections' beliefs are what these tests look at."""
import fcntl, json, os, sys, time

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
LOCKING = MODE not in ("far-validity", "seconds")
lockfile = open("hostile.lock", "a") if LOCKING else None  # the cwd: the driver's folder
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
        if LOCKING:
            try:
                fcntl.flock(lockfile, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                send({"re": kind, "result": "fail", "error": "taken"})
                continue
        elif MODE == "far-validity":
            reply["valid_until_ms"] = 1e14
        elif MODE == "seconds":
            reply["valid_until_ms"] = time.time() + ttl / 1000
        send(reply)
    elif kind == "renew":
        if MODE == "renew-hangs":
            hang()
        send({"re": kind, "result": "ok", "valid_until_ms": 1e14})
    elif kind == "release":
        if LOCKING:
            fcntl.flock(lockfile, fcntl.LOCK_UN)
        send({"re": kind, "result": "ok"})
    elif kind == "read" and MODE == "renew-hangs":
        # a first read (the section then holds, and renews): its only
        # one, since the renew that follows is never answered
        send({"re": kind, "result": "ok", "reply": ["300", "0", ""]})
    elif kind in ("read", "write"):
        time.sleep(ttl / 2000)  # a section's length, so the holds overlap
        send({"re": kind, "result": "fail", "error": "no storage in this driver"})
    elif kind == "stop":
        break
