"""The web app in-process (FastAPI's TestClient), on SQLite and on PostgreSQL: accounts, the
wishlist (submit, vote, order, states), leaderboards from ledger evaluations and imported records,
the API's documentation, and bad input that must get a clear error and change nothing."""

from __future__ import annotations

import copy
import html
import json
import sys
import tempfile
import uuid
import zipfile
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from kernelcraft.ledger import Ledger
from kernelcraft.web import Settings, create_app
from kernelcraft.web.app import apply_maintainers
from kernelcraft.web.results import import_paths

from conftest import ROOT
from web_support import DATABASES, csrf_of, fresh_database, snapshot, task_zip

db_url = pytest.fixture(params=DATABASES)(fresh_database)
H200 = ROOT / "tests" / "fixtures" / "records" / "h200"  # frozen real records (README there)
PEER_RUN = ROOT / "tests" / "fixtures" / "records" / "h200-peers" / "rmsnorm.json"  # real trusted rows, failed candidates
# FROZEN rmsnorm's candidates against PEER_RUN's trusted rows: a test input, not a measurement (README there)
DERIVED = ROOT / "tests" / "fixtures" / "records" / "derived" / "rmsnorm_with_peers.DERIVED.json"
PASSWORD = "correct horse 42"


@pytest.fixture()
def app(db_url):
    return create_app(Settings(db_url=db_url, max_upload_mb=0.25, secret=b"test-secret"))


def client(app) -> TestClient:
    return TestClient(app, follow_redirects=False)


def sign_up(app, name: str) -> tuple[TestClient, str]:
    c = client(app)
    token = csrf_of(c.get("/signup").text)
    r = c.post("/signup", data={"username": name, "password": PASSWORD, "csrf_token": token})
    assert r.status_code == 303, r.text
    return c, token


def upload(c: TestClient, token: str, data: bytes, api: bool = False):
    if api:
        return c.post("/api/wishlist", files={"file": ("task.zip", data, "application/zip")},
                      headers={"X-CSRF-Token": token})
    return c.post("/wishlist/upload", data={"csrf_token": token}, files={"file": ("task.zip", data, "application/zip")})


def test_accounts_hashed_passwords_and_sessions(app, db_url):
    c, token = sign_up(app, "alice")
    assert "alice" in c.get("/wishlist").text
    rows = snapshot(db_url)["accounts"]
    assert len(rows) == 1 and "$argon2id$" in rows[0][2] and PASSWORD not in rows[0][2]
    again = client(app)
    t2 = csrf_of(again.get("/signup").text)
    r = again.post("/signup", data={"username": "alice", "password": PASSWORD, "csrf_token": t2})
    assert r.status_code == 400 and "is taken" in r.text
    r = again.post("/signup", data={"username": "bob", "password": "short", "csrf_token": t2})
    assert r.status_code == 400 and "8 to 256 characters" in r.text
    r = again.post("/signin", data={"username": "alice", "password": "wrong password", "csrf_token": t2})
    assert r.status_code == 401 and "wrong username or password" in r.text
    r = again.post("/signin?next=//evil.example/x", data={"username": "alice", "password": PASSWORD, "csrf_token": t2})
    assert r.status_code == 303 and r.headers["location"] == "/wishlist"  # never off-site
    assert "alice" in again.get("/wishlist").text
    assert 'action="/signin?next=/wishlist/new"' in again.get("/signin?next=/wishlist/new").text.replace("%2F", "/")
    r = again.post("/signin?next=/wishlist/new", data={"username": "alice", "password": PASSWORD, "csrf_token": t2})
    assert r.headers["location"] == "/wishlist/new"
    assert c.post("/signout", data={"csrf_token": token}).status_code == 303
    assert "Sign in" in c.get("/wishlist").text
    assert len(snapshot(db_url)["web_sessions"]) == 1  # alice's other session lives on


def _names(c: TestClient) -> list[str]:
    return [r["name"] for r in c.get("/api/wishlist").json()]


def test_submit_vote_order_and_states(app, db_url):
    alice, ta = sign_up(app, "alice")
    bob, tb = sign_up(app, "bob")
    carol, tc = sign_up(app, "carol")
    r = upload(alice, ta, task_zip("softmax", name="req_a"))
    assert r.status_code == 303 and r.headers["location"].startswith("/wishlist/")
    r = upload(bob, tb, task_zip("rmsnorm", name="req_b"), api=True)  # the JSON API, same checks
    assert r.status_code == 201, r.text
    b_id = r.json()["id"]
    a_id = next(x["id"] for x in alice.get("/api/wishlist").json() if x["name"] == "req_a")
    assert _names(alice) == ["req_a", "req_b"]  # one vote each (the author's), the older first
    assert carol.post(f"/wishlist/{b_id}/vote", data={"csrf_token": tc}).status_code == 303
    assert _names(alice) == ["req_b", "req_a"]  # the order changes with the votes
    html = alice.get("/wishlist").text
    assert html.index("req_b") < html.index("req_a")
    before = snapshot(db_url)
    r = carol.post(f"/wishlist/{b_id}/vote", data={"csrf_token": tc})
    assert r.status_code == 409 and "one vote per account" in r.text
    r = carol.post(f"/api/wishlist/{b_id}/vote", headers={"X-CSRF-Token": tc})
    assert r.status_code == 409 and "one vote per account" in r.json()["detail"]
    assert snapshot(db_url) == before
    assert carol.delete(f"/api/wishlist/{b_id}/vote", headers={"X-CSRF-Token": tc}).json() == {"votes": 1}
    assert carol.post(f"/api/wishlist/{a_id}/vote", headers={"X-CSRF-Token": tc}).json() == {"votes": 2}
    assert _names(alice) == ["req_a", "req_b"]
    # states: only maintainers change them
    before = snapshot(db_url)
    r = alice.post(f"/wishlist/{a_id}/state", data={"csrf_token": ta, "state": "accepted"})
    assert r.status_code == 403 and "Only maintainers" in r.text
    assert snapshot(db_url) == before
    assert apply_maintainers(app.state.ledger, ["alice", "nobody"]) == ["nobody"]
    r = alice.post(f"/wishlist/{a_id}/state", data={"csrf_token": ta, "state": "accepted"})
    assert r.status_code == 303
    r = alice.put(f"/api/wishlist/{a_id}/state", json={"state": "in_progress"}, headers={"X-CSRF-Token": ta})
    assert r.status_code == 200 and r.json()["state"] == "in_progress"
    r = alice.put(f"/api/wishlist/{a_id}/state", json={"state": "shipped"}, headers={"X-CSRF-Token": ta})
    assert r.status_code == 400 and "new, accepted, in_progress, done" in r.json()["detail"]
    changes = snapshot(db_url)["state_changes"]
    assert [(row[3], row[4]) for row in changes] == [("'new'", "'accepted'"), ("'accepted'", "'in_progress'")]
    assert [x["name"] for x in alice.get("/api/wishlist?state=in_progress").json()] == ["req_a"]
    page = alice.get(f"/wishlist/{a_id}").text
    assert "in progress" in page and "softmax" in page and "Change state" in page
    detail = alice.get(f"/api/wishlist/{a_id}").json()
    assert detail["definition"]["name"] == "req_a" and detail["workloads"] and "def run" in detail["baseline"]
    z = zipfile.ZipFile(__import__("io").BytesIO(alice.get(f"/wishlist/{a_id}/task.zip").content))
    assert "req_a/definition.json" in z.namelist() and "req_a/baseline.py" in z.namelist()


def _zip(entries: dict[str, bytes], symlink: str | None = None) -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (0o120777 << 16)
            z.writestr(info, "/etc/passwd")
    return buf.getvalue()


def test_bad_input_gets_a_clear_error_and_changes_nothing(app, db_url):
    alice, ta = sign_up(app, "alice")
    assert upload(alice, ta, task_zip("softmax", name="taken")).status_code == 303
    req_id = alice.get("/api/wishlist").json()[0]["id"]
    anon = client(app)
    anon_token = csrf_of(anon.get("/wishlist/new").text)
    slip = f"kc_slip_{uuid.uuid4().hex}.txt"
    good = task_zip("softmax").replace(b"", b"")

    def bad_definition(files):
        d = json.loads(files["definition.json"])
        d["outputs"]["y"]["shape"] = ["num_rows", "no_such_axis"]
        files["definition.json"] = json.dumps(d).encode()

    def absolute_safetensors(files):
        line = json.loads(files["workloads.jsonl"].splitlines()[0])
        line["workload"]["inputs"]["x"] = {"type": "safetensors", "path": "/etc/passwd", "tensor_key": "x"}
        files["workloads.jsonl"] = json.dumps(line).encode() + b"\n"

    def huge_power(files):
        d = json.loads(files["definition.json"])
        d["constraints"].append("num_rows ** (10 ** 10) > 0")
        files["definition.json"] = json.dumps(d).encode()

    cases = [
        # (what, client, request, status, text in the answer)
        ("vote without an account", anon, lambda: anon.post(f"/wishlist/{req_id}/vote", data={"csrf_token": anon_token}),
         401, "Sign in to vote"),
        ("vote without an account, API", anon, lambda: anon.post(f"/api/wishlist/{req_id}/vote",
                                                                 headers={"X-CSRF-Token": anon_token}), 401, "Sign in"),
        ("upload without an account", anon, lambda: upload(anon, anon_token, good), 401, "Sign in to submit"),
        ("forged form: no token", alice, lambda: alice.post(f"/wishlist/{req_id}/unvote"), 403, "CSRF"),
        ("forged form: wrong token", alice, lambda: alice.post(f"/wishlist/{req_id}/unvote",
                                                               data={"csrf_token": "0" * 64}), 403, "CSRF"),
        ("forged form: another client's token", alice,
         lambda: alice.post(f"/wishlist/{req_id}/unvote", data={"csrf_token": anon_token}), 403, "CSRF"),
        ("forged API call", alice, lambda: alice.delete(f"/api/wishlist/{req_id}/vote"), 403, "CSRF"),
        ("forged upload", alice, lambda: alice.post("/wishlist/upload", files={"file": ("t.zip", good)}), 403, "CSRF"),
        ("malformed zip", alice, lambda: upload(alice, ta, b"PK\x03\x04 this is not a zip"), 400, "not a readable zip"),
        ("oversized upload", alice, lambda: upload(alice, ta, b"x" * (300 << 10)), 413, "larger than this server accepts"),
        ("oversized upload, refused before reading", alice, lambda: upload(alice, ta, b"x" * (400 << 10)), 413,
         "larger than this server accepts"),
        ("oversized upload, chunked", alice, lambda: alice.post(
            "/api/wishlist", content=iter([b"y" * (64 << 10)] * 6),
            headers={"X-CSRF-Token": ta, "content-type": "multipart/form-data; boundary=zz"}), 413, "larger than"),
        ("zip slip", alice, lambda: upload(alice, ta, _zip({"definition.json": b"{}", f"../{slip}": b"x"})), 400,
         "leaves the folder"),
        ("absolute entry", alice, lambda: upload(alice, ta, _zip({f"/tmp/{slip}": b"x"})), 400, "leaves the folder"),
        ("symlink entry", alice, lambda: upload(alice, ta, _zip({"definition.json": b"{}"}, symlink="baseline.py")),
         400, "symbolic link"),
        ("no task folder inside", alice, lambda: upload(alice, ta, _zip({"notes.txt": b"hi"})), 400,
         "no definition.json"),
        ("invalid definition", alice, lambda: upload(alice, ta, task_zip("softmax", name="bad1", edit=bad_definition)),
         400, "no_such_axis"),
        ("safetensors outside the folder", alice,
         lambda: upload(alice, ta, task_zip("softmax", name="bad2", edit=absolute_safetensors)), 400,
         "must name a file inside the task folder"),
        ("constraint with a huge power", alice,
         lambda: upload(alice, ta, task_zip("softmax", name="bad3", edit=huge_power)), 400, "constant exponent"),
        ("a request of that name exists", alice, lambda: upload(alice, ta, task_zip("softmax", name="taken")), 409,
         "exists already"),
    ]
    for what, _, call, status, text in cases:
        before = snapshot(db_url)
        r = call()
        assert r.status_code == status, (what, r.status_code, r.text[:500])
        assert text in r.text, (what, r.text[:1500])
        assert snapshot(db_url) == before, f"{what}: the database changed"
    assert not (Path(tempfile.gettempdir()) / slip).exists()
    api = alice.post("/api/wishlist", files={"file": ("t.zip", task_zip("softmax", name="bad4", edit=bad_definition))},
                     headers={"X-CSRF-Token": ta})
    assert api.status_code == 400
    problem = api.json()["problems"][0]
    assert problem["file"] == "definition.json" and "no_such_axis" in problem["problem"]


def test_uploaded_code_is_never_executed(tmp_path):
    """baseline.py, the reference and a solution all write a marker when executed; none runs."""
    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'l.db'}", secret=b"s"))
    marker = tmp_path / "executed.txt"
    payload = f"open({str(marker)!r}, 'a').write('ran')\n"

    def plant(files):
        files["baseline.py"] = (payload + files["baseline.py"].decode()).encode()
        d = json.loads(files["definition.json"])
        d["reference"] = payload + d["reference"]
        files["definition.json"] = json.dumps(d).encode()
        files["solutions/evil.py"] = (payload + "def run(x):\n    return x\n").encode()

    alice, ta = sign_up(app, "alice")
    modules = set(sys.modules)
    r = upload(alice, ta, task_zip("softmax", name="planted", edit=plant))
    assert r.status_code == 303, r.text
    assert not marker.exists(), "the web process executed uploaded code"
    assert not [m for m in set(sys.modules) - modules if m in ("baseline", "evil")]
    page = alice.get(r.headers["location"]).text
    assert "planted" in page and "executed.txt" in page  # shown as text, not run


def test_form_submission_shows_errors_at_the_field(tmp_path):
    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'l.db'}", secret=b"s"))
    alice, ta = sign_up(app, "alice")
    src = ROOT / "tasks" / "silu_mul"
    values = {"definition": (src / "definition.json").read_text().replace('"name": "silu_mul_bf16_i14336"',
                                                                          '"name": "from_form"'),
              "workloads": (src / "workloads.jsonl").read_text().replace("silu_mul_bf16_i14336", "from_form"),
              "baseline": (src / "baseline.py").read_text(), "readme": "# from the form\n", "contract": ""}
    broken = dict(values, definition="{ not json")
    r = alice.post("/wishlist/form", data={**broken, "csrf_token": ta})
    assert r.status_code == 400
    assert 'id="err-definition"' in r.text and "not valid JSON" in r.text
    assert "from_form" in r.text  # what was typed is kept
    broken = dict(values, workloads=values["workloads"].replace('"num_tokens"', '"n_tokens"', 1))
    r = alice.post("/wishlist/form", data={**broken, "csrf_token": ta})
    assert r.status_code == 400 and 'id="err-workloads"' in r.text and "n_tokens" in r.text
    r = alice.post("/wishlist/form", data={**values, "csrf_token": ta})
    assert r.status_code == 303, r.text
    assert "from the form" in alice.get(r.headers["location"]).text


def _best_in_record() -> tuple[str, float]:
    """The fastest PASSED solution of the committed H200 rmsnorm record and its speedup."""
    rec = json.loads((H200 / "rmsnorm.json").read_text())
    best = max((s for s in rec["solutions"] if s["status"] == "PASSED" and s["name"] not in ("baseline", "torch.compile")),
               key=lambda s: s["speedup_vs_baseline"] or 0)
    return best["name"], best["speedup_vs_baseline"]


def _cpu_record() -> dict:
    rec = json.loads((H200 / "rmsnorm.json").read_text())
    rec = copy.deepcopy(rec)
    rec["device"], rec["environment"]["hardware"] = "cpu", "Intel Xeon (test)"
    return rec


def test_leaderboards_from_imported_records_and_ledger_runs(app, db_url):
    led: Ledger = app.state.ledger
    got = import_paths(led, [H200])
    records = [f for f in H200.rglob("*.json") if "solutions" in json.loads(f.read_text())]
    assert len(got) == len(records) >= 3
    assert all(g.new for g in got) and not any(g.error for g in got)
    assert not any(g.new for g in import_paths(led, [H200]))  # importing again is a no-op
    # a CPU run in the ledger, as `optimize` records it
    rec = _cpu_record()
    run = led.new_run("rmsnorm_bf16_h4096", str(ROOT / "tasks" / "rmsnorm"), {}, "tuner", "cpu", 2, {})
    base = led.add_candidate(run, None, "baseline", "the task's baseline.py", "", {}, "a" * 64)
    led.record(base, "PASSED", None, "", 1.0, "", {**rec, "solutions": [rec["solutions"][0]]})
    child = led.add_candidate(run, base, "tuner", "tune BLOCK_M=4", "", {}, "b" * 64)
    led.record(child, "PASSED", None, "", 1.47, "", {**rec, "solutions": [rec["solutions"][1]]})
    led.promote(run, child, "rule")
    c = client(app)
    task = c.get("/api/tasks/rmsnorm_bf16_h4096").json()
    boards = {b["hardware"]: b for b in task["boards"]}
    assert set(boards) == {"NVIDIA H200", "Intel Xeon (test)"}
    assert boards["Intel Xeon (test)"]["device"] == "cpu" and boards["NVIDIA H200"]["device"] == "cuda"
    top = boards["NVIDIA H200"]["rows"][0]
    assert top["solution"] == _best_in_record()[0] and top["status"] == "PASSED"
    best, speedup = _best_in_record()
    assert abs(top["speedup_vs_baseline"] - speedup) < 1e-9 and top["date"].startswith("2026-11-29")
    page = c.get("/tasks/rmsnorm_bf16_h4096").text
    assert "NVIDIA H200" in page and best in page and f"{speedup:.2f}" in page
    assert "CPU: wall-clock timings" in page and "hidden_states" in page  # the contract, from the task folder
    prov = c.get(top["provenance"].split("#")[0])
    seed = str(json.loads((H200 / "rmsnorm.json").read_text())["seed"])
    assert prov.status_code == 200 and seed in prov.text  # the seed that replays it
    run_page = c.get(f"/runs/{run}").text
    assert "<svg" in run_page and "tune BLOCK_M=4" in run_page and "promoted" in run_page
    assert c.get(f"/api/runs/{run}").json()["candidates"][1]["parent"] == base
    assert [t["name"] for t in c.get("/api/tasks").json()] == sorted(
        {json.loads(f.read_text())["task"] for f in records})
    assert "silu_mul_bf16_i14336" in c.get("/tasks").text


def test_importing_records_through_the_api(app, db_url):
    alice, ta = sign_up(app, "alice")
    rec = json.loads((H200 / "softmax.json").read_text())
    before = snapshot(db_url)
    r = alice.post("/api/results", json=rec, headers={"X-CSRF-Token": ta})
    assert r.status_code == 403 and "Only maintainers" in r.json()["detail"]
    assert snapshot(db_url) == before
    apply_maintainers(app.state.ledger, ["alice"])
    before = snapshot(db_url)
    r = alice.post("/api/results", json={"task": "x"}, headers={"X-CSRF-Token": ta})
    assert r.status_code == 400 and r.json()["problems"]
    assert snapshot(db_url) == before
    r = alice.post("/api/results", json=rec, headers={"X-CSRF-Token": ta})
    assert r.status_code == 200 and r.json()["new"] is True
    assert alice.post("/api/results", json=rec, headers={"X-CSRF-Token": ta}).json()["new"] is False
    assert alice.get("/api/tasks/softmax_bf16").json()["boards"][0]["rows"][0]["solution"] == "softmax_bf16_cuda_vec8"


def test_api_sessions_and_documentation(app):
    c = client(app)
    token = c.get("/api/csrf").json()["csrf_token"]
    r = c.post("/api/accounts", json={"username": "dora", "password": PASSWORD}, headers={"X-CSRF-Token": token})
    assert r.status_code == 201 and r.json()["username"] == "dora" and r.json()["role"] == "member"
    assert c.delete("/api/session", headers={"X-CSRF-Token": token}).status_code == 204
    r = c.post("/api/session", json={"username": "dora", "password": "nope nope"}, headers={"X-CSRF-Token": token})
    assert r.status_code == 401
    r = c.post("/api/session", json={"username": "dora", "password": PASSWORD}, headers={"X-CSRF-Token": token})
    assert r.status_code == 200
    spec = c.get("/api/openapi.json").json()
    for path, method in [("/api/wishlist", "post"), ("/api/wishlist", "get"), ("/api/wishlist/{request_id}/vote", "post"),
                         ("/api/wishlist/{request_id}/state", "put"), ("/api/session", "post"),
                         ("/api/accounts", "post"), ("/api/tasks/{name}", "get"), ("/api/results", "post"),
                         ("/api/runs/{run_id}", "get")]:
        op = spec["paths"][path][method]
        assert op.get("summary") and "200" in op["responses"] or "201" in op["responses"], (path, method)
    assert "/wishlist" not in spec["paths"]  # the pages are not part of the API
    assert "RequestOut" in spec["components"]["schemas"]
    page = c.get("/wishlist")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"


def test_task_page_links_the_report_command_output(tmp_path):
    from conftest import kc

    reports = tmp_path / "reports"
    reports.mkdir()
    proc = kc("report", H200 / "rmsnorm.json", "--html", reports / "rmsnorm_bf16_h4096.html")
    assert proc.returncode == 0, proc.stderr
    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'l.db'}", reports_dir=reports, secret=b"s"))
    import_paths(app.state.ledger, [H200 / "rmsnorm.json", H200 / "softmax.json"])
    c = client(app)
    assert 'href="/tasks/rmsnorm_bf16_h4096/report"' in c.get("/tasks/rmsnorm_bf16_h4096").text
    r = c.get("/tasks/rmsnorm_bf16_h4096/report")
    assert r.status_code == 200 and "data:image/png;base64" in r.text
    assert r.headers["content-security-policy"] == "sandbox"  # its markup cannot act on this site
    assert "/report" not in c.get("/tasks/softmax_bf16").text.split("<main")[1].split("Leaderboard")[0]
    assert c.get("/tasks/softmax_bf16/report").status_code == 404
    assert c.get("/tasks/..%2F..%2Fetc%2Fpasswd/report").status_code == 404


def test_api_docs_work_offline_under_the_sites_own_policy(app):
    """Issue 24: /api/docs was Swagger UI from a CDN, blank without internet access."""
    c = client(app)
    r = c.get("/api/docs")
    assert r.status_code == 200 and "default-src 'self'" in r.headers["content-security-policy"]
    page = html.unescape(r.text)
    assert "<script" not in page and "cdn" not in page.lower() and "https://" not in page
    spec = c.get("/api/openapi.json").json()
    for path, item in spec["paths"].items():
        for method, op in item.items():
            assert f"{method.upper()} {path}" in page and op["summary"] in page, (method, path)
    assert "RequestOut" in page and "X-CSRF-Token" in page and 'href="/api/openapi.json"' in page


def test_api_csrf_error_tells_a_program_what_to_send(app):
    c = client(app)
    r = c.post("/api/session", json={"username": "dora", "password": PASSWORD})
    detail = r.json()["detail"]
    assert r.status_code == 403 and "Reload the page" not in detail
    assert "GET /api/csrf" in detail and "X-CSRF-Token" in detail and "nothing was changed" in detail
    page = c.post("/signin", data={"username": "dora", "password": PASSWORD})  # a person's form: reload it
    assert page.status_code == 403 and "Reload the page" in page.text


def test_leaderboard_marks_only_candidates_promotable(app):
    """The H200 records mark the baseline and torch.compile rows promotable (the worker applied the
    speedup rule to every row); a leaderboard shows only candidates as promotable."""
    rec = json.loads((H200 / "rmsnorm.json").read_text())
    assert any(s["promotable"] for s in rec["solutions"] if s["name"] in ("baseline", "torch.compile"))
    import_paths(app.state.ledger, [H200 / "rmsnorm.json"])
    [board] = client(app).get("/api/tasks/rmsnorm_bf16_h4096").json()["boards"]
    rows = {r["solution"]: r for r in board["rows"]}
    trusted = {r["solution"]: r for r in board["trusted"]}
    # the trusted rows are compared with, not ranked: a table of their own, never promotable
    assert set(trusted) == {"baseline", "torch.compile"} and not set(trusted) & set(rows)
    assert not any(r["promotable"] for r in trusted.values())
    assert all(r["promotable"] for r in rows.values())
    # an old record: its torch.compile named for what it was, no figure headlined against it
    assert trusted["torch.compile"]["label"] == "torch.compile (dynamic, old harness)"
    assert {r["headline"] for r in rows.values()} == {"no peer measured"}
    assert all(r["speedup_vs_best_peer"] is None for r in rows.values())
    page = client(app).get("/tasks/rmsnorm_bf16_h4096").text
    assert "No peer measured in these records" in page and "torch.compile (dynamic, old harness)" in page
    board_html = page.split('class="leaderboard"')[1].split("<tbody>")[1].split("</table>")[0]
    assert "<strong>torch.compile" not in board_html and "<strong>baseline</strong>" not in board_html


def _import_changed(app, path: Path, tmp: Path, change) -> None:
    rec = json.loads(path.read_text())
    change(rec)
    out = tmp / path.name
    out.write_text(json.dumps(rec))
    [got] = import_paths(app.state.ledger, [out])
    assert got.new and not got.error, got.error


def test_leaderboard_leads_with_the_best_peer(app, tmp_path):
    rec = json.loads(DERIVED.read_text())

    def everything_promotable(r):  # no trusted row may be shown promotable, whatever its record says
        for s in r["solutions"]:
            s["promotable"] = True
    _import_changed(app, DERIVED, tmp_path, everything_promotable)
    c = client(app)
    [board] = c.get("/api/tasks/rmsnorm_bf16_h4096").json()["boards"]
    cands = sorted((s for s in rec["solutions"] if s["role"] == "candidate"), key=lambda s: -s["speedup_vs_best_peer"])
    assert [r["solution"] for r in board["rows"]] == [s["name"] for s in cands]  # ranked by x best peer
    for r, s in zip(board["rows"], cands, strict=True):
        assert r["speedup_vs_best_peer"] == s["speedup_vs_best_peer"] and r["headline"] == f"{s['speedup_vs_best_peer']:.2f}x"
        assert r["best_peers"] == ["peer:liger (liger-kernel 0.8.5)", "torch.compile (static shapes, torch 2.11.0+cu130)"]
        for wp, w in zip(r["by_workload"], s["workloads"], strict=True):  # which peer it was, per workload
            assert wp["peer"].startswith(w["best_peer"] + " (") and wp["peer_ms"] == w["best_peer_latency_ms"]
            assert wp["speedup"] == w["speedup_vs_best_peer"] and wp["latency_ms"] == w["latency_ms"]
    trusted = {r["solution"]: r for r in board["trusted"]}
    assert set(trusted) == {s["name"] for s in rec["solutions"] if s["role"] != "candidate"}
    assert not any(r["promotable"] for r in trusted.values()) and all(r["role"] != "candidate" for r in trusted.values())
    assert trusted["peer:liger"]["label"] == "peer:liger (liger-kernel 0.8.5)"
    assert trusted["peer:flashinfer"]["why"] == "module 'flashinfer' is not installed here (pip install flashinfer-python)"
    gone = dict(x.split(": ", 1) for x in board["peers_unavailable"])
    assert set(gone) == {"peer:quack", "peer:flashinfer"} and "No CTK flavor installed" in gone["peer:quack"]
    page = html.unescape(c.get("/tasks/rmsnorm_bf16_h4096").text)
    heads = page.split('class="leaderboard"')[1].split("</thead>")[0]
    assert heads.index("× best peer") < heads.index("× baseline")
    first = page.split('class="leaderboard"')[1].split("<tbody>")[1].split("</tr>")[0]
    assert cands[0]["name"] in first and f"{cands[0]['speedup_vs_best_peer']:.2f}" in first and "vs peer:liger" in first
    assert "Compared with" in page and "pip install flashinfer-python" in page and "No peer measured" not in page
    tasks = html.unescape(c.get("/tasks").text)
    assert f"{cands[0]['speedup_vs_best_peer']:.2f} " in tasks and "× best peer" in tasks
    # the real peer run, newer: its trusted rows and its (failed) candidates replace the derived record's
    import_paths(app.state.ledger, [PEER_RUN])
    [board] = c.get("/api/tasks/rmsnorm_bf16_h4096").json()["boards"]
    assert {r["date"][:10] for r in board["trusted"] if r["solution"] != "peer:flashinfer"} == {"2026-12-01"}
    assert {r["status"] for r in board["rows"]} == {"RUNTIME_ERROR"} and {r["headline"] for r in board["rows"]} == {"-"}
    assert len(board["rows"]) == 5 and not any(r["promotable"] for r in board["rows"] + board["trusted"])


def test_ledger_candidates_headline_from_the_peers_they_name(app):
    """A ledger run keeps its candidates only: their records name the fastest rows and the SKIPPED peers."""
    rec = json.loads(DERIVED.read_text())
    header = {k: v for k, v in rec.items() if k != "solutions"}
    cand = next(s for s in rec["solutions"] if s["name"] == "triton_rowwise")
    cpu = copy.deepcopy(cand)  # a CPU run: the baseline is the only trusted row, so the "best peer"
    cpu["name"], cpu["source_hash"] = "triton_rowwise_cpu", "c" * 64
    for w in cpu["workloads"]:
        w["best_peer"] = "baseline"
    cpu["best_peers"] = ["baseline"]
    led: Ledger = app.state.ledger
    run = led.new_run("rmsnorm_bf16_h4096", str(ROOT / "tasks" / "rmsnorm"), {}, "tuner", "cuda", 2, {})
    for sol in (cand, cpu):
        cid = led.add_candidate(run, None, "tuner", sol["name"], "", {}, sol["source_hash"])
        led.record(cid, "PASSED", None, "", sol["speedup_vs_baseline"], "", {**header, "solutions": [sol]})
    [board] = client(app).get("/api/tasks/rmsnorm_bf16_h4096").json()["boards"]
    rows = {r["solution"]: r for r in board["rows"]}
    assert rows["triton_rowwise"]["speedup_vs_best_peer"] == cand["speedup_vs_best_peer"]
    assert rows["triton_rowwise"]["best_peers"] == ["peer:liger", "torch.compile"]
    assert rows["triton_rowwise_cpu"]["headline"] == "no peer measured" and rows["triton_rowwise_cpu"]["speedup_vs_best_peer"] is None
    assert [r["solution"] for r in board["rows"]] == ["triton_rowwise", "triton_rowwise_cpu"]
    assert board["peers_unavailable"] == ["peer:flashinfer: module 'flashinfer' is not installed here (pip install flashinfer-python)"]
