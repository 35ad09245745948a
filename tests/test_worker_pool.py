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
        spare_pid = pool._spares[("cpu", None)][0][0].pid
        second = pool._take("cpu")
        assert second[0].pid == spare_pid and second[0].pid != first[0].pid  # a fresh process, already started
        stale_pid = pool._spares[("cpu", None)][0][0].pid
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


def test_a_two_job_lane_keeps_two_spares_and_prestart_waits_until_they_are_warm(monkeypatch):
    """keep=2: after a take, two spares wait; prestart returns once each has imported the gauntlet
    (its ("warm",) word read), and a job run on such a spare still completes normally."""
    monkeypatch.setenv("KERNELCRAFT_WARM_WORKER", "1")
    pool.shutdown_spares()
    try:
        seconds = pool.prestart("cpu", keep=2, timeout_s=120)
        waiting = pool._spares[("cpu", None)]
        assert len(waiting) == 2 and all(p.is_alive() for p, _, _ in waiting)
        assert seconds > 0
        assert not any(c.poll(0) for _, c, _ in waiting)  # their ("warm",) was read by prestart
        oldest = waiting[0][0].pid
        first = pool._take("cpu", keep=2)
        assert first[0].pid == oldest  # the oldest spare, warm
        assert len(pool._spares[("cpu", None)]) == 2  # topped up
        _stop(*first)
    finally:
        pool.shutdown_spares()
