"""A person's path through ``kernelcraft serve`` in a real browser: Debian's Chromium, driven by
Playwright (headless, its executable given explicitly: nothing downloads a browser), against a real
server process on a loopback port with a SQLite ledger. Sign up, submit a request (zip upload),
vote, see the order change, a maintainer changes a state, and the task page shows a leaderboard row
from a recorded H200 evaluation. Screenshots of the wishlist and a task page are written to the
test's folder, and to ``docs/`` when ``KC_UPDATE_SCREENSHOTS=1``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from web_support import Server, task_zip

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
PASSWORD = "correct horse 42"


def chromium() -> str:
    exe = os.environ.get("KERNELCRAFT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(exe).is_file():
        msg = f"no Chromium at {exe}: install Debian's package (apt-get install chromium) or set KERNELCRAFT_CHROMIUM"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser test, but {msg}")
        pytest.skip(msg)
    return exe


@pytest.fixture()
def browser_exe() -> str:
    return chromium()


@pytest.fixture()
def server(tmp_path):
    from kernelcraft.ledger import Ledger
    from kernelcraft.web.auth import create_account

    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    with Ledger(db).session() as s:  # the maintainer's account exists before the server starts
        create_account(s, "maint", PASSWORD)
        s.commit()
    srv = Server(db, "--import-results", str(ROOT / "tests" / "fixtures" / "records" / "h200"), "--maintainer", "maint",
                 log=tmp_path / "server.log")
    yield srv
    srv.stop()


def _sign_up(page, base: str, name: str) -> None:
    page.goto(f"{base}/signup")
    page.fill("#username", name)
    page.fill("#password", PASSWORD)
    page.click("form.form button[type=submit]")
    page.wait_for_url(f"{base}/wishlist")
    assert page.inner_text("header .user").startswith(name)


def _sign_out(page) -> None:
    page.click("header button.link")


def _order(page) -> list[str]:
    return page.locator("li.wish h2").all_inner_texts()


def test_sign_up_submit_vote_and_read_a_leaderboard(browser_exe, server, tmp_path):
    from playwright.sync_api import sync_playwright

    base = server.url
    zips = {}
    for task, name in (("rmsnorm", None), ("silu_mul", None), ("softmax", None)):
        zips[task] = tmp_path / f"{task}.zip"
        zips[task].write_bytes(task_zip(task, name=name))
    shots = tmp_path / "shots"
    shots.mkdir()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_exe, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        try:
            page.goto(f"{base}/wishlist")
            assert "No requests" in page.inner_text("main")
            # alice asks for rmsnorm, bob for silu_mul and softmax: uploads of task-folder zips
            _sign_up(page, base, "alice")
            for who, tasks in (("alice", ["rmsnorm"]), ("bob", ["silu_mul", "softmax"])):
                if who == "bob":
                    _sign_out(page)
                    _sign_up(page, base, "bob")
                for t in tasks:
                    page.goto(f"{base}/wishlist/new")
                    page.set_input_files("input[type=file]", str(zips[t]))
                    page.click("text=Upload and check")
                    page.wait_for_url(f"{base}/wishlist/*")
                    assert page.inner_text("h1").endswith(("h4096", "i14336", "softmax_bf16"))
            page.goto(f"{base}/wishlist")
            assert _order(page) == ["rmsnorm_bf16_h4096", "silu_mul_bf16_i14336", "softmax_bf16"]
            # carol and dora vote for softmax: it moves to the top
            for voter in ("carol", "dora"):
                _sign_out(page)
                _sign_up(page, base, voter)
                page.locator("li.wish", has_text="softmax_bf16").locator("button.vote").click()
                page.wait_for_url(f"{base}/wishlist")
            assert _order(page) == ["softmax_bf16", "rmsnorm_bf16_h4096", "silu_mul_bf16_i14336"]
            assert page.locator("li.wish", has_text="softmax_bf16").locator(".count").inner_text() == "3"
            assert page.locator("li.wish", has_text="softmax_bf16").locator("button.vote").inner_text() == "✓ voted"
            # dora also votes for silu_mul: it passes rmsnorm (2 votes against 1)
            page.locator("li.wish", has_text="silu_mul_bf16_i14336").locator("button.vote").click()
            page.wait_for_url(f"{base}/wishlist")
            assert _order(page) == ["softmax_bf16", "silu_mul_bf16_i14336", "rmsnorm_bf16_h4096"]
            # the maintainer accepts softmax and starts on rmsnorm
            _sign_out(page)
            page.goto(f"{base}/signin")
            page.fill("#username", "maint")
            page.fill("#password", PASSWORD)
            page.click("form.form button[type=submit]")
            page.wait_for_url(f"{base}/wishlist")
            for name, state in (("softmax_bf16", "accepted"), ("rmsnorm_bf16_h4096", "in_progress")):
                page.click(f"li.wish h2 >> text={name}")
                page.select_option("#state-select", state)
                page.click("text=Change state")
                assert page.inner_text("#state") == state.replace("_", " ")
                page.goto(f"{base}/wishlist")
            _sign_out(page)
            _sign_up(page, base, "erin")
            page.screenshot(path=str(shots / "wishlist.png"), full_page=True)
            # the request links to its task page, whose leaderboard holds the recorded H200 evaluation
            page.click("li.wish h2 >> text=rmsnorm_bf16_h4096")
            page.click("text=task page and leaderboard")
            page.wait_for_url(f"{base}/tasks/rmsnorm_bf16_h4096")
            board = page.locator("section.board", has_text="NVIDIA H200")
            first = board.locator("table.leaderboard tbody tr").first
            rec = json.loads((ROOT / "tests" / "fixtures" / "records" / "h200" / "rmsnorm.json").read_text())
            best = max((s for s in rec["solutions"] if s["status"] == "PASSED"),
                       key=lambda s: s["speedup_vs_baseline"] or 0)
            assert best["name"] in first.inner_text() and "PASSED" in first.inner_text()
            assert f"{best['speedup_vs_baseline']:.2f}" in first.inner_text() and "2026-11-29" in first.inner_text()
            page.set_viewport_size({"width": 1280, "height": 1500})  # the leaderboard and the contract
            page.screenshot(path=str(shots / "task.png"))
            first.locator("text=record").click()
            assert str(rec["seed"]) in page.inner_text("main")  # the seed, to replay the inputs
        finally:
            browser.close()
    for name in ("wishlist.png", "task.png"):
        data = (shots / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000, name
        if os.environ.get("KC_UPDATE_SCREENSHOTS") == "1":
            shutil.copy(shots / name, ROOT / "docs" / f"web-{name}")
