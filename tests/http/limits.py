"""The HTTP server's limits, driving the real `goald serve`: an event far
larger than the stream's buffers, slow clients.  Run by
tests/integration/http_limits.sh (GOALD_BIN, GOALD_SOURCE_DIR); apart from
test_api.py because each takes tens of seconds.
"""
import json
import os
import shutil
import socket
import tempfile
import threading
import time

import pytest

from test_api import Server, goald, request

BIG = 20 << 20  # bytes of the stored payload
MIB = 1 << 20


@pytest.fixture
def tmp():
    d = tempfile.mkdtemp(prefix="goald-limits-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def proc_status(pid):
    """VmHWM and VmRSS of pid (bytes), and whether it runs under ASan."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS"):
                out[k] = int(v.split()[0]) * 1024
    with open(f"/proc/{pid}/maps") as f:
        out["asan"] = "libasan" in f.read()
    return out


class Stream:
    """A raw event stream, read incrementally (chunked framing undone as
    it comes: a 20 MiB event costs no quadratic re-parsing)."""

    def __init__(self, url, token):
        host, port = url.split("//")[1].split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        self.sock.sendall(f"GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}"
                          "\r\nAccept: text/event-stream\r\n\r\n".encode())
        self.raw = b""
        while b"\r\n\r\n" not in self.raw:
            self._recv()
        head, self.raw = self.raw.split(b"\r\n\r\n", 1)
        self.status = int(head.split()[1])
        self.body = bytearray()
        self.pos = 0  # of body, up to which frames were taken

    def _recv(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise EOFError("the stream ended")
        self.raw += chunk

    def _dechunk(self):
        while True:
            nl = self.raw.find(b"\r\n")
            if nl < 0:
                return
            size = int(self.raw[:nl].split(b";")[0], 16)
            if len(self.raw) < nl + 2 + size + 2:
                return
            self.body += self.raw[nl + 2:nl + 2 + size]
            self.raw = self.raw[nl + 2 + size + 2:]

    def frames_until(self, last_id):
        """Every event up to the one of id last_id: [(id, data text)]."""
        got = []
        while not got or got[-1][0] != last_id:
            end = self.body.find(b"\n\n", self.pos)
            if end < 0:
                self._recv()
                self._dechunk()
                continue
            frame = bytes(self.body[self.pos:end]).decode()
            self.pos = end + 2
            eid = data = None
            for line in frame.split("\n"):
                if line.startswith("id: "):
                    eid = int(line[4:])
                elif line.startswith("data: "):
                    data = line[6:]
            if data is not None:
                got.append((eid, data))
        return got

    def close(self):
        self.sock.close()


def insert_event(db, payload_text, kind="test.big"):
    cur = db.execute("INSERT INTO events (ts, type, payload) VALUES (?, ?, ?)",
                     (int(time.time() * 1000), kind, payload_text))
    return cur.lastrowid


def test_big_event_streams_whole_in_bounded_memory(tmp):
    s = Server(tmp)
    # Under ASan a freed block waits in a quarantine (256 MiB by default)
    # before reuse, so the process grows with what it ever allocated, not
    # with what it holds: a 1 MiB quarantine makes the figure the held one
    opts = [o for o in os.environ.get("ASAN_OPTIONS", "").split(":") if o]
    s.env["ASAN_OPTIONS"] = ":".join(opts + ["quarantine_size_mb=1"])
    goald(s.env, "migrate")
    tok = s.token("read")
    s.start()
    pid = s.proc.pid
    try:
        db = s.db()
        before = insert_event(db, '{"n": 1}', "test.before")
        # a payload of 20 MiB as another path may have stored it: spaces and
        # a line break outside its strings, escapes and non-ASCII inside
        unit = 'line "one"\\nzwei é ' * 8
        text = json.dumps({"summary": unit * (BIG // len(unit.encode()))}, ensure_ascii=False)
        text = text.replace('{"summary": ', '{\n  "summary" :  ', 1)[:-1] + ' ,\n "tail": [1, 2, 3] }'
        assert len(text.encode()) > BIG
        big = insert_event(db, text)
        after = [insert_event(db, json.dumps({"i": i}), "test.after") for i in range(3)]
        db.close()
        # the baseline: the server up, its pool opened, a stream read past
        # the small events before the big one (ASan's shadow memory and
        # SQLite's caches are paid for here)
        warm = Stream(s.url, tok)
        warm.frames_until(before)
        warm.close()
        for _ in range(5):
            request(s.url + "/v1/status", tok)
        base = proc_status(pid)
        streams = [Stream(s.url, tok) for _ in range(8)]
        assert {x.status for x in streams} == {200}
        results, errors = [None] * 8, []

        def read(i):
            try:
                results[i] = streams[i].frames_until(after[-1])
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(repr(e))

        threads = [threading.Thread(target=read, args=(i,)) for i in range(8)]
        peak = base
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            time.sleep(0.05)
            cur = proc_status(pid)
            peak = cur if cur["VmRSS"] > peak["VmRSS"] else peak
        for t in threads:
            t.join()
        assert not errors, errors
        end = proc_status(pid)
        want = json.loads(text)
        for got in results:
            ids = [e for e, _ in got]
            assert ids[-5:] == [before, big] + after, ids[-6:]
            ev = json.loads(dict(got)[big])
            assert ev["seq"] == big and ev["type"] == "test.big"
            assert ev["payload"] == want, "the big event arrived changed"
            assert [json.loads(dict(got)[a])["payload"] for a in after] == [{"i": i} for i in range(3)]
        for x in streams:
            x.close()
        # memory: the peak (VmHWM) over the baseline, in both builds; and
        # the whole of it in a build without ASan
        grew = end["VmHWM"] - base["VmHWM"]
        print(f"serve VmHWM {base['VmHWM'] / MIB:.1f} -> {end['VmHWM'] / MIB:.1f} MiB "
              f"(+{grew / MIB:.1f}), VmRSS peak {peak['VmRSS'] / MIB:.1f} MiB, asan {end['asan']}")
        assert grew < 64 * MIB, f"8 streams of a 20 MiB event grew serve by {grew / MIB:.1f} MiB"
        if not end["asan"]:
            assert end["VmHWM"] < 64 * MIB, f"serve's VmHWM is {end['VmHWM'] / MIB:.1f} MiB"
    finally:
        s.stop()


def trickle(url, source, first=b"G"):
    """A client that connects from source and sends one byte."""
    host, port = url.split("//")[1].split(":")
    c = socket.create_connection((host, int(port)), timeout=5, source_address=(source, 0))
    c.sendall(first)
    return c


def is_open(c):
    c.setblocking(False)
    try:
        return c.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        c.setblocking(True)


def test_slow_clients_cannot_lock_everyone_out(tmp):
    s = Server(tmp)  # the defaults: 10 s a request, 32 without a token, 8 an address
    goald(s.env, "migrate")
    tok = s.token("read")
    s.start()
    stop = threading.Event()
    try:
        # 64 clients that send a byte every 20 s: 32 from 127.0.0.1 (where
        # the valid client comes from too), 32 from four other addresses
        sources = ["127.0.0.1"] * 32 + [f"127.0.0.{2 + i // 8}" for i in range(32)]
        slow = []
        for src in sources:
            slow.append(trickle(s.url, src))
            time.sleep(0.01)

        def keep_trickling():
            while not stop.wait(20):
                for c in slow:
                    try:
                        c.sendall(b"E")
                    except OSError:
                        pass

        threading.Thread(target=keep_trickling, daemon=True).start()
        # the one whose deadline is watched: alone on its address, the newest
        watched = trickle(s.url, "127.0.0.9")
        t_watched = time.monotonic()
        time.sleep(0.5)
        # valid requests are answered at once, on new connections
        for _ in range(5):
            t0 = time.monotonic()
            st, _, body = request(s.url + "/v1/status", tok)
            took = time.monotonic() - t0
            assert st == 200, (st, body)
            assert took < 1, f"a valid request took {took:.2f} s beside 64 slow clients"
        # the slow ones were held to the caps: 8 from an address, 32 in all
        time.sleep(0.5)
        held = [c for c in slow if is_open(c)]
        local = [c for c, src in zip(slow, sources) if src == "127.0.0.1" and is_open(c)]
        assert len(local) <= 8, len(local)
        assert len(held) <= 32, len(held)
        assert is_open(watched)
        # the watched one is cut at its deadline (10 s), not before
        watched.settimeout(15)
        try:
            data = watched.recv(1)
        except ConnectionResetError:
            data = b""
        cut_after = time.monotonic() - t_watched
        assert data == b"", data
        assert 9 <= cut_after <= 12.5, f"cut after {cut_after:.1f} s (deadline 10 s)"
        # every slow client is gone by now (each connected before the watched
        # one; the deadline thread looks every 250 ms, and a loaded machine
        # delays it: a little grace); a valid one still gets in
        deadline = time.monotonic() + 3
        while [c for c in slow if is_open(c)] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [c for c in slow if is_open(c)]
        assert request(s.url + "/v1/status", tok)[0] == 200
    finally:
        stop.set()
        s.stop()
