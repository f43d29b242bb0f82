"""portalocker 2.2.1 RedisLock: two or three holders at once, no fault.

RedisLock.acquire (portalocker/redis.py 144-169) counts the channel's
subscribers with PUBSUB NUMSUB on the client's connection, SUBSCRIBEs on a
second connection (the PubSub's) without waiting for the subscription to be
confirmed, then counts again on the first connection and takes the lock if
the count is 1. When a contender's NUMSUB overtakes its own SUBSCRIBE, the
1 it sees is the other contender's subscription, and both return the lock.

This script puts a 0-2 ms jitter on every chunk each way between the
clients and redis-server (a small TCP relay, order kept within a
connection, as any network keeps it), runs THREADS contenders, each with its
own RedisLock and Redis client, and counts acquisitions that overlap.

    redis-server --port 6395 --save "" &
    /usr/bin/python3 repro.py 6395            # jitter 0-2 ms
    /usr/bin/python3 repro.py 6395 0          # no jitter (the relay only)
    /usr/bin/python3 repro.py 6395 2 fixed    # the suggested fix applied


Needs python3-portalocker and python3-redis (Debian bookworm: 2.2.1-1 and
4.3.4-3). Prints the count and exits 1 when two holders overlapped.
"""
import random
import socket
import sys
import threading
import time

from portalocker import exceptions, utils
from portalocker.redis import PubSubWorkerThread, RedisLock

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
JITTER = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.002
FIXED = len(sys.argv) > 3 and sys.argv[3] == 'fixed'
THREADS, PER_THREAD, HOLD = 3, 60, 0.005


class FixedRedisLock(RedisLock):
    """RedisLock.acquire with the suggested fix: wait for the server to
    confirm this lock's own SUBSCRIBE before counting subscribers, so
    that a count of 1 can only be this subscription."""

    def acquire(self, timeout=None, check_interval=None, fail_when_locked=None):
        timeout = utils.coalesce(timeout, self.timeout, 0.0)
        check_interval = utils.coalesce(check_interval, self.check_interval, 0.0)
        connection = self.get_connection()
        for _ in self._timeout_generator(timeout, check_interval):
            subscribers = connection.pubsub_numsub(self.channel)[0][1]
            if subscribers and self.check_or_kill_lock(connection, self.unavailable_timeout):
                continue
            connection.client_setname(self.client_name)
            self.pubsub = connection.pubsub()
            self.pubsub.subscribe(**{self.channel: self.channel_handler})
            # the fix: read the subscribe confirmation first (bounded)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                m = self.pubsub.get_message(timeout=0.1)
                if m and m.get('type') == 'subscribe':
                    break
            self.thread = PubSubWorkerThread(self.pubsub, sleep_time=self.thread_sleep_time)
            self.thread.start()
            if connection.pubsub_numsub(self.channel)[0][1] == 1:
                return self
            self.release()
        raise exceptions.AlreadyLocked(exceptions)


def relay(listen):
    def pump(src, dst, seed):
        rnd = random.Random(seed)
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if JITTER:
                    time.sleep(rnd.uniform(0, JITTER))
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    n = 0
    while True:
        c, _ = listen.accept()
        u = socket.create_connection(('127.0.0.1', PORT))
        for s in (c, u):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        n += 1
        threading.Thread(target=pump, args=(c, u, 2 * n), daemon=True).start()
        threading.Thread(target=pump, args=(u, c, 2 * n + 1), daemon=True).start()


def main():
    listen = socket.socket()
    listen.bind(('127.0.0.1', 0))
    listen.listen(64)
    rport = listen.getsockname()[1]
    threading.Thread(target=relay, args=(listen,), daemon=True).start()

    guard = threading.Lock()
    state = {'inside': 0, 'acquired': 0, 'overlaps': 0, 'max': 0, 'failed': 0}

    def contender(i):
        lock = (FixedRedisLock if FIXED else RedisLock)('repro-channel', thread_sleep_time=0.01,
                         redis_kwargs=dict(host='127.0.0.1', port=rport))
        for _ in range(PER_THREAD):
            try:
                lock.acquire(timeout=5, check_interval=0.005)
            except Exception:
                with guard:
                    state['failed'] += 1
                continue
            with guard:
                state['acquired'] += 1
                state['inside'] += 1
                if state['inside'] > 1:
                    state['overlaps'] += 1
                state['max'] = max(state['max'], state['inside'])
            time.sleep(HOLD)
            with guard:
                state['inside'] -= 1
            lock.release()
            time.sleep(random.uniform(0, 0.002))

    t0 = time.time()
    ts = [threading.Thread(target=contender, args=(i,)) for i in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print('%s, jitter 0-%g ms, %d contenders: %d acquisitions, %d began while another '
          'holder was inside (at most %d inside at once), %d acquire calls failed, %.1f s'
          % ('fixed' if FIXED else 'portalocker 2.2.1', JITTER * 1000, THREADS, state['acquired'], state['overlaps'],
             state['max'], state['failed'], time.time() - t0))
    if state['overlaps']:
        print('BUG: RedisLock granted the lock to two holders at once')
        sys.exit(1)
    print('no overlap seen')


if __name__ == '__main__':
    main()
