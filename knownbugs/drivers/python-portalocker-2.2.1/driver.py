#!/usr/bin/python3
"""locksim driver (docs/DRIVERS.md): portalocker 2.2.1's RedisLock (Debian
python3-portalocker, over python3-redis 4.3.4) on the run's one node, used as
its docstring says: RedisLock(channel, redis_kwargs=...), acquire(timeout),
release(). The lock is "the one subscriber of the channel" (the channel is
start's key); it has no expiry, so no validity signal (the holder believes
until it releases), no fencing token, no renewal.

Upstream fix applied at load time when the environment says so (the twin,
knownbugs/drivers/python-portalocker-2.2.1-fixed): FIXED=1 replaces
RedisLock.acquire with portalocker 2.2.1's own acquire
(/usr/lib/python3/dist-packages/portalocker/redis.py 129-177) changed in
one place only: after SUBSCRIBE (162) and before the worker thread (163)
and the second count (167), read this subscription's confirmation from
the PubSub's own connection, so Redis has processed the SUBSCRIBE before
the count is sent on the other connection. Without a confirmation within
unavailable_timeout, the attempt is given up (release, try again) instead
of counted."""
import json, os, sys, time, uuid
import redis
import portalocker
from portalocker import exceptions, utils
from portalocker.redis import PubSubWorkerThread, RedisLock

FIXED = os.environ.get("PORTALOCKER_TWIN") == "fixed"
# acquire's check_interval (the pause between polls while the channel has a
# subscriber): 10 ms, a caller that wants the lock soon after it is free
# (the library's default is 0.25 s, utils.py 16; thread_sleep_time stays at
# its 0.1 s). docs/upstream/portalocker/repro.py polls every 5 ms.
CHECK = 0.01

def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()

def point(name):  # a pause point: say it, wait for the harness's continue
    send({"point": name})
    if json.loads(sys.stdin.readline()).get("type") != "continue":
        sys.exit("expected continue")

def fixed_acquire(self, timeout=None, check_interval=None, fail_when_locked=None):
    """redis.py 129-177 as in 2.2.1, with the confirmation wait (marked)."""
    timeout = utils.coalesce(timeout, self.timeout, 0.0)
    check_interval = utils.coalesce(check_interval, self.check_interval, 0.0)
    fail_when_locked = utils.coalesce(fail_when_locked, self.fail_when_locked)
    assert not self.pubsub, 'This lock is already active'
    connection = self.get_connection()
    timeout_generator = self._timeout_generator(timeout, check_interval)
    for _ in timeout_generator:
        subscribers = connection.pubsub_numsub(self.channel)[0][1]
        if subscribers:
            if self.check_or_kill_lock(connection, self.unavailable_timeout):
                continue
            else:
                subscribers = None
        if not subscribers:
            connection.client_setname(self.client_name)
            self.pubsub = connection.pubsub()
            self.pubsub.subscribe(**{self.channel: self.channel_handler})
            # --- the fix: wait for this SUBSCRIBE's confirmation (read on
            # the PubSub's connection, before the worker thread would read
            # and drop it) so the count below is ordered after it.
            confirmed = False
            deadline = time.monotonic() + self.unavailable_timeout
            while time.monotonic() < deadline:
                message = self.pubsub.get_message(timeout=0.05)
                if message and message.get('type') == 'subscribe':
                    confirmed = True
                    break
            if not confirmed:
                self.pubsub.close()
                self.pubsub = None
                continue
            # --- end of the fix
            self.thread = PubSubWorkerThread(self.pubsub, sleep_time=self.thread_sleep_time)
            self.thread.start()
            subscribers = connection.pubsub_numsub(self.channel)[0][1]
            if subscribers == 1:
                return self
            else:
                self.release()
        if fail_when_locked:
            raise exceptions.AlreadyLocked(exceptions)
    raise exceptions.AlreadyLocked(exceptions)

if FIXED:
    RedisLock.acquire = fixed_acquire

def main():
    start = json.loads(sys.stdin.readline())
    if start.get("sentinels") or len(start.get("nodes") or []) != 1:
        send({"re": "start", "result": "fail", "error": "this driver runs against one Redis node (RedisLock takes one connection); the world has %d nodes%s" % (len(start.get("nodes") or []), " and Sentinels" if start.get("sentinels") else "")})
        return
    host, port = start["nodes"][0].rsplit(":", 1)
    # The library's defaults otherwise (no socket timeout, health_check_interval
    # 10, unavailable_timeout 1 s, thread_sleep_time 0.1 s); check_interval CHECK;
    # acquire waits as long as set-nx-cad keeps trying.
    if portalocker.__version__ != "2.2.1":
        # The entry measures 2.2.1 (Debian bookworm's); another version is
        # another measurement.
        send({"re": "start", "result": "fail", "error": "portalocker %s installed; this driver pins 2.2.1 (Debian bookworm's python3-portalocker)" % portalocker.__version__})
        return
    lock = RedisLock(start["key"], redis_kwargs=dict(host=host, port=int(port), client_name=start["client"]))
    wait = (start["tries"] - 1) * start["retry_ms"] / 1000
    t = start["timeout_ms"] / 1000
    sh, sp = start["storage"].rsplit(":", 1)
    store = redis.Redis(host=sh, port=int(sp), socket_timeout=t, socket_connect_timeout=t, client_name=start["client"], decode_responses=True)
    send({"re": "start", "result": "ok", "library": "portalocker %s RedisLock%s (redis-py %s)" % (portalocker.__version__, " + upstream fix (twin)" if FIXED else "", redis.__version__)})
    held = None  # the value this driver made up for the held lock (RedisLock has none)
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        if kind == "stop":
            return
        try:
            if kind == "acquire":
                lock.acquire(timeout=wait, check_interval=CHECK)
                point("after-check")
                held = uuid.uuid4().hex
                send({"re": kind, "result": "ok", "value": held})  # no validity: a subscription has no expiry
            elif kind == "release":
                if req["value"] != held:
                    send({"re": kind, "result": "fail", "error": "not the held lock"})
                    continue
                held = None
                lock.release()
                send({"re": kind, "result": "ok"})
            elif kind in ("read", "write"):
                res = store.execute_command(*req["command"])
                send({"re": kind, "result": "ok", "reply": res if isinstance(res, list) else [str(res)]})
            else:
                send({"re": kind, "result": "fail", "error": "not supported"})
        except exceptions.AlreadyLocked as e:
            send({"re": kind, "result": "fail", "error": "AlreadyLocked within %.3f s" % wait})
        except redis.ResponseError as e:
            send({"re": kind, "result": "fail", "error": str(e)})
        except (redis.RedisError, OSError) as e:
            send({"re": kind, "result": "unknown", "error": "%s: %s" % (type(e).__name__, e)})

main()
