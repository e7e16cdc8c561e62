#!/usr/bin/env python3
"""The store under every process at once: an HTTP server with live event
streams and short requests, goals submitted by API and by CLI, and a daemon
started and stopped (some of the stops SIGKILL) beside them, all on one
SQLite database.  Afterwards the database must be intact, every submitted
goal in it, seen by the API and by every stream, and no request may have
been answered 5xx.

    soak.py serve   goald serve beside the restarted daemon
    soak.py daemon  the daemon itself serves (http.listen), restarted

Environment: GOALD_BIN, GOALD_DB, the model script (GOALD_LLM_SCRIPT) and
the repository (SOAK_REPO) come from the calling shell script; SOAK_GOALS
(default 50), SOAK_RESTARTS (20), SOAK_KILLS (5) and SOAK_STREAMS (4)
size it.
"""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

GOALD = os.environ["GOALD_BIN"]
DB = os.environ["GOALD_DB"]
REPO = os.environ["SOAK_REPO"]
TMP = os.environ["SOAK_TMP"]
GOALS = int(os.environ.get("SOAK_GOALS", "50"))
RESTARTS = int(os.environ.get("SOAK_RESTARTS", "20"))
KILLS = int(os.environ.get("SOAK_KILLS", "5"))
STREAMS = int(os.environ.get("SOAK_STREAMS", "4"))

problems = []
lock = threading.Lock()
stop = threading.Event()


def problem(msg):
    with lock:
        problems.append(msg)
    print("soak: " + msg, file=sys.stderr, flush=True)


def goald(*args, check=True):
    p = subprocess.run([GOALD, *args], capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise RuntimeError(f"goald {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def goal_doc(n):
    return {
        "title": f"soak goal {n}", "description": "a goal of the soak test",
        "repo": REPO, "base_branch": "main",
        "success_criteria": ["the gate passes"],
        "verification": [{"name": "tests", "type": "test", "command": "true",
                          "must_pass": True, "timeout_s": 60}],
        "budget": {"max_tokens": 10000000},
        "publish": {"push": False, "pull_request": False},
    }


class Api:
    """Requests to the server at base; a refused connection (the daemon
    restarting in `daemon` mode) is retried, a 5xx is a problem."""

    def __init__(self, base, token):
        self.base = base
        self.token = token
        self.answers = 0

    def call(self, method, path, body=None, want=(200,), retry_s=60):
        data = json.dumps(body).encode() if body is not None else None
        deadline = time.monotonic() + retry_s
        while True:
            req = urllib.request.Request(self.base + path, data=data, method=method)
            req.add_header("Authorization", "Bearer " + self.token)
            if data is not None:
                req.add_header("Content-Type", "application/json")
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    self.answers += 1
                    return r.status, json.loads(r.read() or b"null")
            except urllib.error.HTTPError as e:
                self.answers += 1
                text = e.read().decode("utf-8", "replace")
                if e.code >= 500:
                    problem(f"{method} {path}: {e.code} {text.strip()}")
                    return e.code, None
                if e.code not in want:
                    problem(f"{method} {path}: unexpected {e.code} {text.strip()}")
                return e.code, None
            except (urllib.error.URLError, ConnectionError, socket.timeout, OSError):
                if time.monotonic() > deadline:
                    problem(f"{method} {path}: no answer for {retry_s} s")
                    return 0, None
                time.sleep(0.1)


class Stream(threading.Thread):
    """One live /v1/events stream: reconnects with Last-Event-ID, records
    the goals whose goal.submitted it saw."""

    def __init__(self, n, base, token):
        super().__init__(daemon=True, name=f"stream{n}")
        self.n = n
        self.base = base
        self.token = token
        self.last = None
        self.submitted = set()
        self.events = 0

    def run(self):
        while not stop.is_set():
            req = urllib.request.Request(self.base + "/v1/events")
            req.add_header("Authorization", "Bearer " + self.token)
            if self.last is not None:
                req.add_header("Last-Event-ID", str(self.last))
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    self.read(r)
            except urllib.error.HTTPError as e:
                if e.code >= 500:
                    problem(f"stream {self.n}: {e.code} {e.read().decode('utf-8', 'replace')}")
                time.sleep(0.2)
            except (urllib.error.URLError, ConnectionError, socket.timeout, OSError):
                time.sleep(0.1)

    def read(self, r):
        seq = None
        for raw in r:
            line = raw.decode("utf-8").rstrip("\n")
            if line.startswith("id: "):
                seq = int(line[4:])
            elif line.startswith("data: "):
                ev = json.loads(line[6:])
                if seq is not None and self.last is not None and seq <= self.last:
                    problem(f"stream {self.n}: event {seq} again after {self.last}")
                self.last = seq
                self.events += 1
                if ev.get("type") == "goal.submitted":
                    self.submitted.add(ev.get("goal_id"))
            if stop.is_set():
                return


def reader(api):
    """Short requests all along: the goals list, status, one goal."""
    paths = ["/v1/goals?limit=20", "/v1/status"]
    while not stop.is_set():
        for p in paths:
            api.call("GET", p)
        time.sleep(0.05)


class Daemon:
    def __init__(self, env, log):
        self.env = env
        self.log = log
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([GOALD, "daemon", "--log-file", self.log], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=open(self.log + ".err", "a"),
                                     start_new_session=True)

    def stop(self, kill):
        if kill:
            self.proc.send_signal(signal.SIGKILL)
        else:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            problem("the daemon did not stop within 90 s of SIGTERM")
            self.proc.kill()
            rc = self.proc.wait()
        if not kill and rc not in (0,):
            try:
                with open(self.log + ".err", errors="replace") as f:
                    tail = "".join(f.readlines()[-8:])
            except OSError:
                tail = ""
            problem(f"the daemon exited {rc} on SIGTERM; its stderr ends:\n{tail}")


def wait_url(proc_out, what):
    line = proc_out.readline()
    if not line.startswith("goald: serving "):
        raise RuntimeError(f"{what}: expected 'goald: serving URL', got {line!r}")
    return line.split()[-1]


def wait_up(base, token, seconds=60):
    api = Api(base, token)
    st, _ = api.call("GET", "/v1/status", retry_s=seconds)
    if st != 200:
        raise RuntimeError(f"the server at {base} did not come up")


def main():
    mode = sys.argv[1]
    env = dict(os.environ)
    read_tok = goald("token", "create", "--scope", "read", "--name", "soak-read").stdout.strip()
    sub_tok = goald("token", "create", "--scope", "read,submit",
                    "--name", "soak-submit").stdout.strip()
    server = None
    dlog = os.path.join(TMP, "daemon.log")
    if mode == "serve":
        server = subprocess.Popen([GOALD, "serve", "--listen", "127.0.0.1:0"], env=env,
                                  stdout=subprocess.PIPE, stderr=open(TMP + "/serve.err", "w"),
                                  text=True)
        base = wait_url(server.stdout, "goald serve")
    else:
        port = free_port()
        env["GOALD_HTTP_LISTEN"] = f"127.0.0.1:{port}"
        base = f"http://127.0.0.1:{port}"
    daemon = Daemon(env, dlog)
    daemon.start()
    wait_up(base, read_tok)

    api_read = Api(base, read_tok)
    api_sub = Api(base, sub_tok)
    streams = [Stream(i, base, read_tok) for i in range(STREAMS)]
    for s in streams:
        s.start()
    readers = [threading.Thread(target=reader, args=(Api(base, read_tok),), daemon=True)
               for _ in range(2)]
    for t in readers:
        t.start()

    submitted = []
    kills = set(random.Random(7).sample(range(RESTARTS), KILLS))
    per_cycle = (GOALS + RESTARTS - 1) // RESTARTS
    n = 0
    rnd = random.Random(11)
    for cycle in range(RESTARTS):
        for _ in range(per_cycle):
            if n >= GOALS:
                break
            n += 1
            if n % 2:
                st, body = api_sub.call("POST", "/v1/goals", goal_doc(n), want=(201,))
                if st == 201:
                    submitted.append(body["id"])
                else:
                    problem(f"API submit of goal {n}: {st}")
            else:
                path = os.path.join(TMP, f"goal{n}.json")
                with open(path, "w") as f:
                    json.dump(goal_doc(n), f)
                p = goald("submit", path, check=False)
                if p.returncode != 0:
                    problem(f"CLI submit of goal {n}: exit {p.returncode}: {p.stderr.strip()}")
                else:
                    submitted.append(p.stdout.strip().splitlines()[-1].strip())
            time.sleep(rnd.uniform(0.05, 0.3))
        time.sleep(rnd.uniform(0.2, 1.0))
        daemon.stop(kill=cycle in kills)
        if cycle + 1 < RESTARTS:
            daemon.start()
            if mode == "daemon":
                wait_up(base, read_tok)

    # a last daemon serves the API (daemon mode) while the streams catch up
    if mode == "daemon":
        daemon.start()
        wait_up(base, read_tok)
    want = set(submitted)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(not want <= s.submitted for s in streams):
        time.sleep(0.2)
    for s in streams:
        missing = want - s.submitted
        if missing:
            problem(f"stream {s.n} never saw goal.submitted of {len(missing)} goals: "
                    f"{sorted(missing)[:5]} ({s.events} events seen)")
    for gid in submitted:
        st, body = api_read.call("GET", "/v1/goals/" + gid, want=(200,))
        if st != 200:
            problem(f"goal {gid} is not served by the API: {st}")
    stop.set()
    if mode == "daemon":
        daemon.stop(kill=False)
    if server:
        server.send_signal(signal.SIGTERM)
        rc = server.wait(timeout=60)
        if rc != 0:
            problem(f"goald serve exited {rc}: {open(TMP + '/serve.err').read()[-2000:]}")

    # the database itself, read by the sqlite3 shell once every process is gone
    out = subprocess.run(["sqlite3", "-cmd", ".timeout 10000", DB, "PRAGMA integrity_check;"],
                         capture_output=True, text=True)
    if out.stdout.strip() != "ok":
        problem(f"PRAGMA integrity_check: {out.stdout.strip()[:2000]} {out.stderr.strip()}")
    ids = subprocess.run(["sqlite3", "-cmd", ".timeout 10000", DB, "SELECT id FROM goals;"],
                         capture_output=True, text=True).stdout.split()
    lost = want - set(ids)
    if lost:
        problem(f"{len(lost)} of {len(want)} submitted goals are not in the database: "
                f"{sorted(lost)[:5]}")
    if len(submitted) != GOALS:
        problem(f"{GOALS - len(submitted)} of {GOALS} submits failed")
    print(f"soak {mode}: {len(submitted)} goals submitted, {RESTARTS} daemon starts "
          f"({KILLS} killed), {sum(s.events for s in streams)} events streamed, "
          f"{len(problems)} problems", flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
