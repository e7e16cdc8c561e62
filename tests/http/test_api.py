"""The HTTP API, driving the real `goald serve` over loopback.

Every answer is checked against docs/openapi.json (jsonschema, Draft
2020-12) as well as for its own values.  Run by tests/integration/http_api.sh
(GOALD_BIN, GOALD_SOURCE_DIR).
"""
import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import jsonschema
import pytest

GOALD = os.environ["GOALD_BIN"]
SRC = os.environ["GOALD_SOURCE_DIR"]
with open(os.path.join(SRC, "docs", "openapi.json")) as f:
    SPEC = json.load(f)
RESOLVER = jsonschema.RefResolver.from_schema(SPEC)
CHECKED = set()  # (path, method, status) validated


def goald(env, *args, check=True):
    r = subprocess.run([GOALD, *args], env=env, capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise AssertionError(f"goald {args}: exit {r.returncode}: {r.stderr}")
    return r


class Server:
    def __init__(self, tmp, config=None, listen="127.0.0.1:0"):
        self.tmp = tmp
        self.env = dict(os.environ, GOALD_DB=os.path.join(tmp, "goald.db"), HOME=tmp,
                        XDG_CONFIG_HOME=os.path.join(tmp, "config"),
                        XDG_STATE_HOME=os.path.join(tmp, "state"))
        if config:
            path = os.path.join(tmp, "config.json")
            with open(path, "w") as f:
                json.dump(config, f)
            self.env["GOALD_CONFIG"] = path
        self.listen = listen
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([GOALD, "serve", "--listen", self.listen], env=self.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("goald: serving "), (line, self.proc.stderr.read())
        self.url = line.split()[-1]
        return self

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(timeout=30)
        err = self.proc.stderr.read()
        assert rc == 0, f"serve exited {rc}: {err}"
        return err

    def token(self, scope, name="t"):
        return goald(self.env, "token", "create", "--scope", scope, "--name", name).stdout.strip()

    def db(self):
        return sqlite3.connect(self.env["GOALD_DB"], timeout=10, isolation_level=None)


def request(url, token=None, method="GET", body=None, headers=None, raw=None):
    """One request; every /v1 answer is checked against the description
    (documented): a status the document does not list fails here."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            got = r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        got = e.code, dict(e.headers), e.read()
    documented(url, method, *got)
    return got


def template_of(path):
    """The OpenAPI path template a concrete /v1 path falls under, or None."""
    for template in SPEC["paths"]:
        if re.fullmatch(re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template)), path):
            return template
    return None


def documented(url, method, status, headers, body):
    """A /v1 answer's status is one the description lists for its operation
    (HEAD as GET, without a body); a method the path does not answer gets
    405 naming the ones it does (or 401/400 first, when the token is
    missing or in the query)."""
    path = urllib.parse.urlsplit(url).path
    template = template_of(path)
    if not path.startswith("/v1/") or template is None:
        return
    ops = SPEC["paths"][template]
    m = "get" if method.upper() == "HEAD" else method.lower()
    if m == "options" and status == 204:
        return  # a CORS preflight (http.cors_origin), answered for every path
    if m not in ops:
        assert status in (400, 401, 405, 413, 429, 503), (method, path, status, body)
        if status == 405:
            allowed = {x.strip() for x in headers["Allow"].split(",")}
            want = {x.upper() for x in ops} | ({"HEAD"} if "get" in ops else set())
            assert allowed == want, (path, headers["Allow"])
        return
    assert str(status) in ops[m]["responses"], (
        f"{method} {path} answered {status}, which docs/openapi.json does not list for it")
    if method.upper() == "HEAD":
        assert body == b"", (path, body[:100])
        return
    if headers.get("Content-Type", "").startswith("application/json"):
        validate(template, m, status, headers, body)


def validate(template, method, status, headers, body):
    """The answer against the description of template (an OpenAPI path)."""
    op = SPEC["paths"][template][method.lower()]
    resp = op["responses"][str(status)]
    ctype = headers["Content-Type"].split(";")[0]
    schema = resp["content"][ctype]["schema"]
    jsonschema.Draft202012Validator(schema, resolver=RESOLVER).validate(json.loads(body))
    CHECKED.add((template, method.upper(), status))


def security_headers(h):
    csp = h["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert h["X-Content-Type-Options"] == "nosniff"
    assert h["Referrer-Policy"] == "no-referrer"
    assert "Set-Cookie" not in h
    assert "Access-Control-Allow-Origin" not in h


# where API goals may reach (http.repos, http.remotes): folders of the
# test's own and URL prefixes
def roots(tmp):
    for d in ("repos", "remotes"):
        os.makedirs(os.path.join(tmp, d), exist_ok=True)
    return {"repos": [os.path.join(tmp, "repos"), "https://git.example.com/team/",
                      "ssh://git@git.example.com/team/", "git@git.example.com:team/"],
            "remotes": [os.path.join(tmp, "remotes"), "https://git.example.com/team"]}


@pytest.fixture
def srv():
    tmp = tempfile.mkdtemp(prefix="goald-http-")
    s = Server(tmp, config={"http": {"rate_limit_per_min": 1000, "max_body_kb": 64, **roots(tmp)}})
    goald(s.env, "migrate")
    s.start()
    yield s
    s.stop()
    shutil.rmtree(tmp, ignore_errors=True)


def call(s, template, path, token, method="GET", body=None, want=200, **kw):
    st, h, b = request(s.url + path, token, method, body, **kw)
    assert st == want, (path, st, b)
    security_headers(h)
    validate(template, method, st, h, b)
    return json.loads(b), h


def test_endpoints(srv):
    admin = srv.token("admin", "ops")
    reader = srv.token("read", "dash")
    submitter = srv.token("read,submit", "ci")
    # POST /v1/goals, then the list with its cursor pages
    ids = []
    for i in range(3):
        o, _ = call(srv, "/v1/goals", "/v1/goals", submitter, "POST", {"title": f"goal {i}"}, 201)
        ids.append(o["id"])
        # newest first is by creation time (ms): goals made in the same
        # millisecond come in id order, so each gets one of its own
        time.sleep(0.003)
    page, h = call(srv, "/v1/goals", "/v1/goals?limit=2", reader)
    assert [g["id"] for g in page] == ids[::-1][:2]
    assert 'rel="next"' in h["Link"]
    nxt = h["Link"].split(">")[0].lstrip("<")
    page2, h2 = call(srv, "/v1/goals", nxt, reader)
    assert [g["id"] for g in page2] == [ids[0]] and "Link" not in h2
    cli = json.loads(goald(srv.env, "goals", "--json").stdout)
    allp, _ = call(srv, "/v1/goals", "/v1/goals", reader)
    assert allp == cli, "GET /v1/goals is goals --json"
    call(srv, "/v1/goals", "/v1/goals?status=nope", reader, want=422)
    # q: titles holding it, in any case; the next page keeps it
    found, _ = call(srv, "/v1/goals", "/v1/goals?q=GOAL%201", reader)
    assert [g["id"] for g in found] == [ids[1]]
    pq, hq = call(srv, "/v1/goals", "/v1/goals?q=goal&limit=1", reader)
    assert [g["id"] for g in pq] == [ids[2]] and "&q=goal>" in hq["Link"]
    assert call(srv, "/v1/goals", "/v1/goals?q=nothing%20like%20it", reader)[0] == []
    call(srv, "/v1/goals", "/v1/goals?q=" + "x" * 101, reader, want=422)
    # the report, by a prefix, the same as report --json
    rep, _ = call(srv, "/v1/goals/{id}", "/v1/goals/" + ids[0][:8], reader)
    assert rep == json.loads(goald(srv.env, "report", ids[0], "--json").stdout)
    call(srv, "/v1/goals/{id}", "/v1/goals/ffffffff", reader, want=404)
    # an item with an escalation (seeded: the model is not needed here)
    db = srv.db()
    now = int(time.time() * 1000)
    db.execute("UPDATE goals SET status='active' WHERE id=?", (ids[1],))
    db.execute("INSERT INTO work_items (id, goal_id, key, title, status, created_at, updated_at)"
               " VALUES (?, ?, 'wi-1', 'the item', 'escalated', ?, ?)",
               ("aaaaaaaa-0000-4000-8000-000000000001", ids[1], now, now))
    db.execute("INSERT INTO escalations (id, goal_id, item_id, type, packet, created_at) VALUES"
               " (?, ?, ?, 'ask_human', ?, ?)",
               ("eeeeeeee-0000-4000-8000-000000000001", ids[1],
                "aaaaaaaa-0000-4000-8000-000000000001",
                json.dumps({"minimal_question": "which?", "actions": ["retry", "skip", "pause"]}), now))
    db.close()  # committed: the server reads with connections of its own
    item, _ = call(srv, "/v1/goals/{id}/items/{key}", f"/v1/goals/{ids[1]}/items/wi-1", reader)
    assert item["key"] == "wi-1" and item["status"] == "escalated"
    call(srv, "/v1/goals/{id}/items/{key}", f"/v1/goals/{ids[1]}/items/wi-9", reader, want=404)
    esc, _ = call(srv, "/v1/escalations", "/v1/escalations", reader)
    assert [e["id"] for e in esc] == ["eeeeeeee-0000-4000-8000-000000000001"]
    assert esc == json.loads(goald(srv.env, "escalations", "--json").stdout)
    # resolve: scope, validation, then done; a second time conflicts
    call(srv, "/v1/escalations/{id}/resolve", "/v1/escalations/eeeeeeee/resolve", submitter,
         "POST", {"action": "retry", "input": "the first"}, 403)
    bad, _ = call(srv, "/v1/escalations/{id}/resolve", "/v1/escalations/eeeeeeee/resolve", admin,
                  "POST", {"input": "x"}, 422)
    assert bad["error"]["field"] == "action"
    bad, _ = call(srv, "/v1/escalations/{id}/resolve", "/v1/escalations/eeeeeeee/resolve", admin,
                  "POST", {"action": "skip"}, 422)
    assert "accepts retry" in bad["error"]["message"]  # lifecycle_resolve's own message
    r, _ = call(srv, "/v1/escalations/{id}/resolve", "/v1/escalations/eeeeeeee/resolve", admin,
                "POST", {"action": "retry", "input": "the first"})
    assert r["goal_id"] == ids[1] and r["action"] == "retry"
    call(srv, "/v1/escalations/{id}/resolve", "/v1/escalations/eeeeeeee/resolve", admin,
         "POST", {"action": "retry", "input": "again"}, 409)
    call(srv, "/v1/escalations/{id}/resolve", "/v1/escalations/0123abcd/resolve", admin,
         "POST", {"action": "skip"}, 404)
    # cancel: a reader may not; then 200; then 409 (an illegal transition)
    call(srv, "/v1/goals/{id}/cancel", f"/v1/goals/{ids[2][:8]}/cancel", reader, "POST", want=403)
    c, _ = call(srv, "/v1/goals/{id}/cancel", f"/v1/goals/{ids[2][:8]}/cancel", submitter, "POST")
    assert c == {"id": ids[2], "status": "cancelled", "items_cancelled": 0, "jobs_stopped": 0}
    call(srv, "/v1/goals/{id}/cancel", f"/v1/goals/{ids[2][:8]}/cancel", submitter, "POST", want=409)
    call(srv, "/v1/goals/{id}/cancel", "/v1/goals/0000abcd/cancel", submitter, "POST", want=404)
    # status, the same shape as status --json
    st, _ = call(srv, "/v1/status", "/v1/status", reader)
    assert st["daemon"]["state"] == "not running" and st["open_escalations"] == 0
    assert set(st) == set(json.loads(goald(srv.env, "status", "--json", check=False).stdout))
    # the overview: the status and what the dashboard adds
    ov, _ = call(srv, "/v1/overview", "/v1/overview", reader)
    assert set(st) < set(ov) and ov["daemon"]["health"] == "dead"
    assert ov["goals"] == {"queued": 1, "active": 1, "blocked": 0, "completed": 0, "cancelled": 1}
    assert ov["last_24h"]["runs_failed"] == 0 and ov["last_24h"]["tokens"] == 0
    assert ov["token"] == {"name": "dash", "scopes": ["read"]}
    ov, _ = call(srv, "/v1/overview", "/v1/overview", admin)
    assert ov["token"]["scopes"] == ["read", "submit", "resolve"]
    intake, _ = call(srv, "/v1/intake", "/v1/intake", reader)
    assert intake["submit"] is True and intake["repos"][0] == os.path.join(srv.tmp, "repos")
    spec, _ = call(srv, "/v1/openapi.json", "/v1/openapi.json", reader)
    assert spec == SPEC
    # every write is an event naming the token (id and name, never the secret)
    db = srv.db()
    rows = db.execute("SELECT payload FROM events WHERE type = 'http.write' ORDER BY id").fetchall()
    writes = [json.loads(p) for (p,) in rows]
    assert [w["action"] for w in writes] == ["submit"] * 3 + ["resolve", "cancel"]
    assert {w["token_name"] for w in writes} == {"ci", "ops"}
    secrets = (admin, reader, submitter)
    for (p,) in db.execute("SELECT payload FROM events"):
        assert not any(s in p for s in secrets)
    for (h,) in db.execute("SELECT hash FROM api_tokens"):
        assert h not in secrets and len(h) == 64
    # every documented operation was checked against the description, with its success
    # (the forge's webhook needs a forge trigger and its secret: forge_webhook.sh drives it)
    ops = {(p, m.upper()) for p, item in SPEC["paths"].items() for m in item
           if p not in ("/v1/events", "/v1/forge/webhook")}
    assert ops <= {(p, m) for p, m, s in CHECKED if s < 300}


def test_submit_errors_name_fields(srv):
    tok = srv.token("submit")
    o, _ = call(srv, "/v1/goals", "/v1/goals", tok, "POST",
                {"title": 5, "priority": "high", "budget": {"max_tokens": "x"}}, 422)
    fields = [e["field"] for e in o["error"]["errors"]]
    assert {"title", "priority", "budget.max_tokens"} <= set(fields), o
    assert o["error"]["field"] == fields[0]
    # the same messages as submit
    path = os.path.join(srv.tmp, "body")
    with open(path, "w") as f:
        json.dump({"title": 5, "priority": "high", "budget": {"max_tokens": "x"}}, f)
    r = goald(srv.env, "submit", path, check=False)
    assert r.returncode == 2
    for e in o["error"]["errors"]:
        assert e["message"].split(": ", 1)[1] in r.stderr.replace("\n       ", " ")
    call(srv, "/v1/goals", "/v1/goals", tok, "POST", raw=b"not json", want=400)


def git_repo(path):
    os.makedirs(path, exist_ok=True)
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.com"],
                 ["config", "user.name", "t"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run(["git", "-C", path, *args], check=True, capture_output=True)
    return path


def goal_count(s):
    return s.db().execute("SELECT count(*) FROM goals").fetchone()[0]


def test_submit_confined_to_roots(srv):
    """A submit token reaches only the repositories under http.repos and the
    remotes under http.remotes; the CLI is not confined."""
    tok = srv.token("submit")
    t = srv.tmp
    inside = git_repo(os.path.join(t, "repos", "in"))
    outside = git_repo(os.path.join(t, "outside", "r"))
    git_repo(os.path.join(t, "repos-evil", "r"))
    os.symlink(outside, os.path.join(t, "repos", "link"))
    bare = os.path.join(t, "remotes", "b.git")
    subprocess.run(["git", "init", "-q", "--bare", bare], check=True)
    refused = [
        ({"repo": outside}, "http.repos"),
        ({"repo": os.path.join(t, "repos-evil", "r")}, "http.repos"),
        ({"repo": os.path.join(t, "repos", "..", "outside", "r")}, "http.repos"),
        ({"repo": os.path.join(t, "repos", "link")}, "http.repos"),  # a link out of the root
        ({"repo": "/etc"}, "http.repos"),
        ({"repo": "/nonexistent/x"}, "http.repos"),
        ({"repo": "https://git.example.com/team-evil/r.git", "base_branch": "main"}, "http.repos"),
        ({"repo": "https://git.example.com/team/../evil/r.git", "base_branch": "main"}, "http.repos"),
        ({"repo": "https://git.example.com/team/%2e%2e/evil/r.git", "base_branch": "main"},
         "http.repos"),
        ({"repo": inside, "publish": {"push": True, "remote": "https://git.example.com/team-evil/r"}},
         "http.remotes"),
        ({"repo": inside, "publish": {"push": True, "remote": "https://evil.example/x.git"}},
         "http.remotes"),
        ({"repo": inside, "publish": {"push": True, "remote": os.path.join(t, "outside", "r")}},
         "http.remotes"),
        ({"repo": inside, "publish": {"push": True, "remote": "file://" + outside}}, "http.remotes"),
    ]
    for body, setting in refused:
        o, _ = call(srv, "/v1/goals", "/v1/goals", tok, "POST", {"title": "t", **body}, 403)
        assert setting in o["error"]["message"], (body, o)
        assert o["error"]["class"] == "forbidden"
    assert goal_count(srv) == 0, "a refused goal is never stored"
    accepted = [
        {"repo": inside},
        {"repo": os.path.join(t, "repos", ".", "in")},
        {"repo": "https://git.example.com/team/r.git", "base_branch": "main"},
        {"repo": "git@git.example.com:team/r.git", "base_branch": "main"},
        {"repo": inside, "publish": {"push": True, "remote": "https://git.example.com/team/r.git"}},
        {"repo": inside, "publish": {"push": True, "remote": bare}},
        {"repo": inside, "publish": {"push": True, "remote": "origin"}},  # the repository's own
        {},  # no repository at all
    ]
    for body in accepted:
        call(srv, "/v1/goals", "/v1/goals", tok, "POST", {"title": "t", **body}, 201)
    assert goal_count(srv) == len(accepted)
    repos = {r for (r,) in srv.db().execute("SELECT repo FROM goals WHERE repo LIKE '/%'")}
    assert repos == {inside}, repos  # stored resolved
    # the operator's CLI is not confined
    path = os.path.join(t, "g.json")
    with open(path, "w") as f:
        json.dump({"title": "cli", "repo": outside}, f)
    goald(srv.env, "submit", path)


def test_submit_off_without_roots(tmp_path):
    s = Server(str(tmp_path))
    goald(s.env, "migrate")
    s.start()
    try:
        tok = s.token("read,submit")
        o, _ = call(s, "/v1/goals", "/v1/goals", tok, "POST", {"title": "t"}, 403)
        assert "http.repos" in o["error"]["message"] and "off" in o["error"]["message"]
        intake, _ = call(s, "/v1/intake", "/v1/intake", tok)
        assert intake == {"submit": False, "repos": [], "remotes": []}
        assert goal_count(s) == 0
    finally:
        s.stop()


def test_no_credentials_in_urls(srv):
    """A URL carrying a password or a token is refused by the API and by
    the CLI, and the secret is nowhere: not in the answer, the database,
    the server's log nor the CLI's stderr."""
    tok = srv.token("submit")
    t = srv.tmp
    inside = git_repo(os.path.join(t, "repos", "in"))
    base = {"title": "t", "base_branch": "main"}
    bodies = [
        {"repo": "https://user:SECRET1tok@git.example.com/team/r.git"},
        {"repo": "https://SECRET2tok@git.example.com/team/r.git"},
        {"repo": "https://git.example.com/team/r.git?access_token=SECRET3tok"},
        {"repo": "https://git.example.com/team/r.git?private_token=SECRET4tok"},
        {"repo": "ssh://git:SECRET5tok@git.example.com/team/r.git"},
        {"repo": "git:SECRET6tok@git.example.com:team/r.git"},
        {"repo": inside, "publish": {"push": True,
                                     "remote": "https://x:SECRET7tok@git.example.com/team/r"}},
        {"repo": inside, "publish": {"push": True,
                                     "remote": "https://git.example.com/team/r?token=SECRET8tok"}},
    ]
    for i, b in enumerate(bodies):
        o, _ = call(srv, "/v1/goals", "/v1/goals", tok, "POST", {**base, **b}, 422)
        msg = json.dumps(o)
        assert "holds a credential" in msg and "forge.token_env" in msg, o
        assert "tok" not in msg.replace("token", ""), o
        path = os.path.join(t, f"g{i}.json")
        with open(path, "w") as f:
            json.dump({**base, **b}, f)
        r = goald(srv.env, "submit", path, check=False)
        assert r.returncode == 2 and "holds a credential" in r.stderr.replace("\n       ", " ")
        assert "SECRET" not in r.stderr + r.stdout
    # the user-only forms of ssh stay accepted
    for repo in ("ssh://git@git.example.com/team/r.git", "git@git.example.com:team/r.git"):
        call(srv, "/v1/goals", "/v1/goals", tok, "POST", {**base, "repo": repo}, 201)
    dump = "\n".join(srv.db().iterdump())
    assert "SECRET" not in dump
    log = srv.stop()
    assert "SECRET" not in log


def test_auth_and_limits(srv):
    tok = srv.token("read")
    # no token, an unknown one, a revoked one: 401
    for t in (None, "gld_nope"):
        st, h, b = request(srv.url + "/v1/status", t)
        assert st == 401 and "Bearer" in h["WWW-Authenticate"]
        security_headers(h)
        validate("/v1/status", "GET", st, h, b)
    listed = json.loads(goald(srv.env, "token", "list", "--json").stdout)
    goald(srv.env, "token", "revoke", listed[0]["id"][:8])
    assert request(srv.url + "/v1/status", tok)[0] == 401
    tok = srv.token("read")
    # a token in the query string is refused, even a good one
    st, h, b = request(srv.url + "/v1/status?access_token=" + tok)
    assert st == 400 and "Authorization header" in json.loads(b)["error"]["message"]
    validate("/v1/status", "GET", st, h, b)
    # wrong scope: 403; unknown routes: 404
    st, h, b = request(srv.url + "/v1/goals", tok, "POST", {"title": "x"})
    assert st == 403
    validate("/v1/goals", "POST", st, h, b)
    assert request(srv.url + "/v1/nothing", tok)[0] == 404
    assert request(srv.url + "/nothing")[0] == 404
    # a body over http.max_body_kb (64 KiB here): 413
    sub = srv.token("submit")
    st, h, b = request(srv.url + "/v1/goals", sub, "POST", raw=b"x" * (65 * 1024))
    assert st == 413
    validate("/v1/goals", "POST", st, h, b)


def raw_get(srv, path):
    """GET path exactly as written (no client-side normalising)."""
    s = socket.create_connection(srv.url.split("//")[1].split(":"))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    return int(data.split()[1]), data


def test_static_and_traversal(srv):
    # the dashboard: its script from /static only, no inline script or handler
    st, h, b = request(srv.url + "/")
    assert st == 200 and h["Content-Type"].startswith("text/html")
    scripts = ("lib.js", "pages.js", "app.js")
    assert re.findall(rb"<script[^>]*>", b) == [
        b'<script src="/static/%s" defer>' % n.encode() for n in scripts]
    assert not re.search(rb"\son[a-z]+\s*=", b) and b"style=" not in b
    security_headers(h)
    assert "require-trusted-types-for 'script'" in h["Content-Security-Policy"]
    for name, ctype in (("app.js", "text/javascript"), ("lib.js", "text/javascript"),
                        ("pages.js", "text/javascript"), ("app.css", "text/css"),
                        ("index.html", "text/html"), ("icon.svg", "image/svg+xml")):
        st, h, b = request(srv.url + "/static/" + name)
        assert st == 200 and h["Content-Type"].startswith(ctype), (name, st, h["Content-Type"])
        with open(os.path.join(SRC, "share", "web", name), "rb") as f:
            assert b == f.read(), name
        security_headers(h)
    for name in scripts:
        js = request(srv.url + "/static/" + name)[2]
        assert b"innerHTML" not in js.replace(b"never innerHTML", b"") and b"eval(" not in js, name
        assert b"new Function" not in js and b"EventSource(" not in js, name
    # traversal and names not in the table: 400 or 404, never a file's bytes
    with open(srv.env["GOALD_DB"], "rb") as f:
        db_head = f.read(16)
    for path in ("/static/../../etc/passwd", "/static/%2e%2e/%2e%2e/etc/passwd",
                 "/static/..%2f..%2fetc%2fpasswd", "/../etc/passwd", "/static/../goald.db",
                 "/static/%2e%2e/goald.db", "/static/%2E%2E/goald.db", "//etc/passwd",
                 "/static//etc/passwd", "/static/goald.db", "/static/nothing.js",
                 "/static/app.js/", "/static/", "/static", "/goald.db", "/static/app.js%00.db",
                 "/static/../share/web/app.js"):
        status, data = raw_get(srv, path)
        assert status in (400, 404), (path, data[:200])
        assert b"root:" not in data and db_head not in data, path
        assert b"X-Content-Type-Options: nosniff" in data


def test_rate_limit():
    tmp = tempfile.mkdtemp(prefix="goald-http-")
    s = Server(tmp, config={"http": {"rate_limit_per_min": 3}})
    goald(s.env, "migrate")
    s.start()
    try:
        tok = s.token("read")
        got = [request(s.url + "/v1/status", tok) for _ in range(4)]
        assert [g[0] for g in got] == [200, 200, 200, 429]
        assert 1 <= int(got[3][1]["Retry-After"]) <= 60
        validate("/v1/status", "GET", 429, got[3][1], got[3][2])
        # another token has its own budget
        assert request(s.url + "/v1/status", s.token("read"))[0] == 200
    finally:
        s.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_cors_only_when_configured():
    tmp = tempfile.mkdtemp(prefix="goald-http-")
    s = Server(tmp, config={"http": {"cors_origin": "https://ops.example"}})
    goald(s.env, "migrate")
    s.start()
    try:
        st, h, _ = request(s.url + "/v1/status", s.token("read"))
        assert h["Access-Control-Allow-Origin"] == "https://ops.example"
        st, h, _ = request(s.url + "/v1/status", method="OPTIONS")
        assert st == 204 and "Authorization" in h["Access-Control-Allow-Headers"]
    finally:
        s.stop()
        shutil.rmtree(tmp, ignore_errors=True)


class SSE:
    """A raw Server-Sent Events reader: (id, data) pairs."""

    def __init__(self, url, token, last_id=None, query=""):
        host, port = url.split("//")[1].split(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        extra = f"Last-Event-ID: {last_id}\r\n" if last_id is not None else ""
        self.sock.sendall(f"GET /v1/events{query} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                          f"{token}\r\n{extra}Accept: text/event-stream\r\n\r\n".encode())
        self.buf = b""
        head = self._until(b"\r\n\r\n")
        self.status = int(head.split()[1])
        self.headers = head.decode()

    def _until(self, sep):
        while sep not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk
        out, self.buf = self.buf.split(sep, 1)
        return out

    def events(self, n):
        """The next n events (chunked transfer framing dropped)."""
        got = parse_sse(dechunk(self.buf))
        while len(got) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk
            got = parse_sse(dechunk(self.buf))
        return got[:n]

    def ended(self, timeout):
        """Wait for the stream's end (its last chunk, or the connection
        closed): True, or False after timeout seconds."""
        deadline = time.monotonic() + timeout
        while not self.buf.endswith(b"\r\n0\r\n\r\n") and self.buf != b"0\r\n\r\n":
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return False
            if not chunk:
                return True
            self.buf += chunk
        return True

    def close(self):
        self.sock.close()


def dechunk(b):
    out = b""
    while b:
        line, _, rest = b.partition(b"\r\n")
        if not _:
            break
        size = int(line.split(b";")[0], 16)
        if len(rest) < size + 2:
            break
        out += rest[:size]
        b = rest[size + 2:]
    return out.decode()


def parse_sse(text):
    evs = []
    for block in text.split("\n\n")[:-1]:
        eid = data = None
        for line in block.split("\n"):
            if line.startswith("id: "):
                eid = int(line[4:])
            elif line.startswith("data: "):
                data = json.loads(line[6:])
        if data is not None:
            evs.append((eid, data))
    return evs


def test_sse_resume_no_loss_no_repeat(srv):
    tok = srv.token("read,submit")
    ev_schema = SPEC["paths"]["/v1/events"]["get"]["responses"]["200"]["content"][
        "text/event-stream"]["x-event-data"]
    first = SSE(srv.url, tok)
    assert first.status == 200 and "text/event-stream" in first.headers
    assert "nosniff" in first.headers
    call(srv, "/v1/goals", "/v1/goals", tok, "POST", {"title": "a"}, 201)
    got = first.events(3)  # token.created, goal.submitted, http.write
    for eid, data in got:
        assert eid == data["seq"]
        jsonschema.Draft202012Validator(ev_schema, resolver=RESOLVER).validate(data)
    first.close()  # the connection drops
    # while nobody listens, more events are written
    writer = threading.Thread(target=lambda: [
        request(srv.url + "/v1/goals", tok, "POST", {"title": f"b{i}"}) for i in range(5)])
    writer.start()
    writer.join()
    again = SSE(srv.url, tok, last_id=got[-1][0])
    rest = again.events(10)
    again.close()
    seqs = [e for e, _ in got + rest]
    db_seqs = [r[0] for r in srv.db().execute("SELECT id FROM events ORDER BY id")]
    assert seqs == db_seqs, (seqs, db_seqs)  # none lost, none repeated, in order
    # ?goal= by a prefix
    gid = rest[0][1]["goal_id"]
    only = SSE(srv.url, tok, query=f"?goal={gid[:8]}")
    evs = only.events(2)
    only.close()
    assert {d["goal_id"] for _, d in evs} == {gid}


def test_sse_redacts_payloads(srv):
    """A secret in an event's payload (a tool's argument, the model's
    text) is redacted on the stream, at any depth."""
    tok = srv.token("read")
    secret = "ghp_" + "Zq8vT3kLw9xNc2RbY7pMf4HsJd6Ga1EuK0oV"
    db = srv.db()
    db.execute("INSERT INTO events (ts, type, payload) VALUES (?, 'tool_call.failed', ?)",
               (int(time.time() * 1000), json.dumps({"tool": "read", "args": {"path": secret},
                                                     "list": ["x " + secret]})))
    n = db.execute("SELECT count(*) FROM events").fetchone()[0]
    db.close()
    s = SSE(srv.url, tok)
    evs = s.events(n)
    s.close()
    data = [d for _, d in evs if d["type"] == "tool_call.failed"][0]
    assert secret not in json.dumps(data)
    assert data["payload"]["args"]["path"] == "***REDACTED***"
    assert data["payload"]["list"][0].startswith("x ***REDACTED***")


def test_sse_ends_on_sigterm():
    tmp = tempfile.mkdtemp(prefix="goald-http-")
    s = Server(tmp)
    goald(s.env, "migrate")
    s.start()
    tok = s.token("read")
    stream = SSE(s.url, tok)
    stream.events(1)
    t0 = time.monotonic()
    s.stop()  # exits 0 with a stream open
    assert time.monotonic() - t0 < 10
    stream.close()
    shutil.rmtree(tmp, ignore_errors=True)


def test_non_loopback_needs_tls_or_insecure(tmp_path):
    s = Server(str(tmp_path), listen="0.0.0.0:0")
    goald(s.env, "migrate")
    r = goald(s.env, "serve", "--listen", "0.0.0.0:0", check=False)
    assert r.returncode == 2 and "http.insecure_listen" in r.stderr and "http.tls_cert" in r.stderr
    s2 = Server(str(tmp_path), config={"http": {"insecure_listen": True}}, listen="0.0.0.0:0")
    s2.start()
    assert s2.url.startswith("http://0.0.0.0:")
    s2.stop()


def test_tls(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    s = Server(str(tmp_path), config={"http": {"tls_cert": str(cert), "tls_key": str(key)}},
               listen="0.0.0.0:0")
    goald(s.env, "migrate")
    s.start()
    try:
        assert s.url.startswith("https://")
        port = s.url.rsplit(":", 1)[1]
        tok = s.token("read")
        r = subprocess.run(["curl", "-sS", "--cacert", str(cert), "-H", "Authorization: Bearer " + tok,
                            f"https://127.0.0.1:{port}/v1/status"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["daemon"]["state"] == "not running"
        # plain http to the TLS port gets no answer
        r = subprocess.run(["curl", "-sS", "-m", "5", f"http://127.0.0.1:{port}/v1/status"],
                           capture_output=True, text=True)
        assert r.returncode != 0
    finally:
        s.stop()


def test_daemon_serves_when_http_listen_is_set(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    s = Server(str(tmp_path), config={"http": {"listen": f"127.0.0.1:{port}"}})
    goald(s.env, "migrate")
    tok = s.token("read")
    d = subprocess.Popen([GOALD, "daemon"], env=s.env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = d.stderr.readline()
        assert f"goald: serving http://127.0.0.1:{port}" in line, line
        state = None
        for _ in range(50):  # the first heartbeat
            st, h, b = request(f"http://127.0.0.1:{port}/v1/status", tok)
            assert st == 200
            state = json.loads(b)["daemon"]["state"]
            if state == "running":
                break
            time.sleep(0.1)
        assert state == "running"
    finally:
        d.terminate()
        assert d.wait(timeout=60) == 0
    # without http.listen the daemon does not listen
    s2 = Server(str(tmp_path / "b"))
    os.makedirs(s2.tmp, exist_ok=True)
    goald(s2.env, "migrate")
    d = subprocess.Popen([GOALD, "daemon"], env=s2.env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    d.terminate()
    assert d.wait(timeout=60) == 0
    assert "serving" not in d.stderr.read()


def test_head_and_405(srv):
    tok = srv.token("read,submit")
    # HEAD where GET is: the same status and headers, no body
    for path in ("/v1/status", "/v1/goals", "/v1/openapi.json", "/v1/escalations"):
        gst, gh, gb = request(srv.url + path, tok)
        hst, hh, hb = request(srv.url + path, tok, "HEAD")
        assert (gst, hst, hb) == (200, 200, b""), (path, gst, hst, hb[:80])
        assert hh["Content-Type"] == gh["Content-Type"], path
        assert int(hh["Content-Length"]) > 0, path
        security_headers(hh)
    st, h, b = request(srv.url + "/", method="HEAD")
    assert st == 200 and b == b"" and h["Content-Type"].startswith("text/html")
    assert int(h["Content-Length"]) == len(request(srv.url + "/")[2])
    # a HEAD of the event stream: its headers, then the end
    st, h, b = request(srv.url + "/v1/events", tok, "HEAD")
    assert st == 200 and b == b"" and h["Content-Type"] == "text/event-stream"
    # a method the path does not answer: 405 naming those it does
    for method, path, allow in (("DELETE", "/v1/goals", "GET, HEAD, POST"),
                                ("POST", "/v1/status", "GET, HEAD"),
                                ("PUT", "/v1/goals/0123abcd", "GET, HEAD"),
                                ("GET", "/v1/goals/0123abcd/cancel", "POST"),
                                ("PATCH", "/v1/events", "GET, HEAD")):
        st, h, b = request(srv.url + path, tok, method, raw=b"")
        assert st == 405 and h["Allow"] == allow, (method, path, st, h.get("Allow"))
        assert json.loads(b)["error"]["class"] == "method_not_allowed"
        security_headers(h)
    for method in ("POST", "DELETE"):
        st, h, b = request(srv.url + "/static/app.js", method=method, raw=b"")
        assert st == 405 and h["Allow"] == "GET, HEAD", (method, st)
    # a HEAD of what does not exist: 404 without a body
    st, _, b = request(srv.url + "/v1/goals/0123abcd", tok, "HEAD")
    assert st == 404 and b == b""


def test_statuses_are_documented(srv):
    """Answers the API gives besides the happy path, each checked by
    request() against the statuses docs/openapi.json lists."""
    tok = srv.token("admin")
    gid = call(srv, "/v1/goals", "/v1/goals", tok, "POST", {"title": "t"}, 201)[0]["id"]
    # malformed ids: 422; unknown ones: 404; a body over the cap: 413
    for path, method, want in (("/v1/goals/zz", "GET", 422), ("/v1/goals/0123", "GET", 422),
                               ("/v1/goals/zz/items/wi-1", "GET", 422),
                               ("/v1/goals/zz/cancel", "POST", 422),
                               ("/v1/escalations/zz/resolve", "POST", 422),
                               ("/v1/events?goal=zz", "GET", 422),
                               ("/v1/events?goal=0123abcd", "GET", 404),
                               (f"/v1/goals/{gid}/items/wi-9", "GET", 404)):
        body = {"action": "retry"} if method == "POST" else None
        st, _, b = request(srv.url + path, tok, method, body)
        assert st == want, (path, st, b)
    for path in ("/v1/status", "/v1/goals", f"/v1/goals/{gid}/cancel"):
        st, _, _ = request(srv.url + path, tok, "POST" if "cancel" in path or path == "/v1/goals"
                           else "GET", raw=b"x" * (65 * 1024))
        assert st == 413, path
    # and a status missing from the description fails the check
    with pytest.raises(AssertionError, match="does not list"):
        documented(srv.url + "/v1/status", "GET", 409, {}, b"{}")


def test_stream_ends_when_its_token_is_revoked(srv):
    tok = srv.token("read", "watcher")
    other = srv.token("read", "other")
    stream = SSE(srv.url, tok)
    keeps = SSE(srv.url, other)
    stream.events(1)
    listed = json.loads(goald(srv.env, "token", "list", "--json").stdout)
    tid = next(t["id"] for t in listed if t["name"] == "watcher")
    goald(srv.env, "token", "revoke", tid[:8])
    t0 = time.monotonic()
    assert stream.ended(5), "the stream outlived its token by 5 s"
    assert time.monotonic() - t0 < 5
    stream.close()
    # the other token's stream goes on: it sees the revocation
    evs = keeps.events(3)
    assert evs[-1][1]["type"] == "token.revoked"
    keeps.close()
    assert request(srv.url + "/v1/events", tok)[0] == 401


def test_streams_per_token():
    tmp = tempfile.mkdtemp(prefix="goald-http-")
    s = Server(tmp, config={"http": {"streams_per_token": 2}})
    goald(s.env, "migrate")
    s.start()
    try:
        tok = s.token("read")
        a, b = SSE(s.url, tok), SSE(s.url, tok)
        assert a.status == b.status == 200
        st, h, body = request(s.url + "/v1/events", tok)
        assert st == 429 and int(h["Retry-After"]) >= 1
        assert "http.streams_per_token" in json.loads(body)["error"]["message"]
        # another token has its own streams
        c = SSE(s.url, s.token("read"))
        assert c.status == 200
        # a stream that ends gives its place back (the server sees the
        # client gone at its next write: an event)
        a.close()
        for _ in range(50):
            s.token("read")
            time.sleep(0.2)
            d = SSE(s.url, tok)
            if d.status == 200:
                break
            d.close()
        assert d.status == 200
        for x in (b, c, d):
            x.close()
    finally:
        s.stop()
        shutil.rmtree(tmp, ignore_errors=True)
