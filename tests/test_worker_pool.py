"""The worker pool: each job a process of its own, started warm from a spare spawned ahead of need."""

from __future__ import annotations

import os

from kernelcraft.worker import pool


def _stop(proc, conn):
    conn.close()
    proc.kill()
    proc.join(timeout=10)


def test_next_job_takes_the_spare_and_a_changed_environment_does_not(monkeypatch):
    monkeypatch.setenv("KERNELCRAFT_WARM_WORKER", "1")
    pool.shutdown_spares()
    try:
        first = pool._take("cpu")
        spare_pid = pool._spares[("cpu", None)][0].pid
        second = pool._take("cpu")
        assert second[0].pid == spare_pid and second[0].pid != first[0].pid  # a fresh process, already started
        stale_pid = pool._spares[("cpu", None)][0].pid
        monkeypatch.setenv("KERNELCRAFT_TEST_MARKER", str(os.getpid()))  # the spare saw another environment
        third = pool._take("cpu")
        assert third[0].pid != stale_pid
        for p, c in (first, second, third):
            _stop(p, c)
    finally:
        pool.shutdown_spares()


def test_no_spare_when_no_job_follows(monkeypatch):
    monkeypatch.setenv("KERNELCRAFT_WARM_WORKER", "1")
    pool.shutdown_spares()
    proc, conn = pool._take("cpu", spare_next=False)
    try:
        assert ("cpu", None) not in pool._spares
    finally:
        _stop(proc, conn)


def test_spares_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("KERNELCRAFT_WARM_WORKER", "0")
    pool.shutdown_spares()
    proc, conn = pool._take("cpu")
    try:
        assert ("cpu", None) not in pool._spares
    finally:
        _stop(proc, conn)
