"""Which host cores a GPU worker's processes get (worker.plan_cores) and how a warm candidate
moves to its own (harness.move_to_cores)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from services.sandbox.server.worker import CorePlan, plan_cores


def test_each_gpu_gets_its_own_judge_and_candidate_cores_and_warm_ones_start_elsewhere():
    first, second = plan_cores(range(16), 0, 2), plan_cores(range(16), 1, 2)
    assert first == CorePlan((0, 1), (2, 3), tuple(range(8, 16)))
    assert second == CorePlan((4, 5), (6, 7), tuple(range(8, 16)))


def test_without_spare_cores_warm_candidates_share_the_candidate_cores():
    assert plan_cores(range(8), 1, 2) == CorePlan((4, 5), (6, 7), (6, 7))


def test_too_few_cores_pin_nothing():
    assert plan_cores(range(2), 0, 1) == CorePlan((), (), ())
    assert plan_cores(range(6), 1, 2) == CorePlan((), (), ())


@pytest.mark.slow
def test_a_process_with_threads_moves_every_thread_to_the_cores_it_is_given():
    core = min(os.sched_getaffinity(0))
    script = (
        "import os, threading, time\n"
        "from services.sandbox.candidate.harness import move_to_cores\n"
        "stop = threading.Event()\n"
        "threads = [threading.Thread(target=stop.wait) for _ in range(3)]\n"
        "[t.start() for t in threads]\n"
        f"move_to_cores({{{core}}})\n"
        "masks = {tid: os.sched_getaffinity(int(tid)) for tid in os.listdir('/proc/self/task')}\n"
        "stop.set()\n"
        "print(len(masks), all(m == {%d} for m in masks.values()))\n" % core
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    threads, all_moved = done.stdout.split()
    assert int(threads) >= 4 and all_moved == "True"  # the main thread, ours, and any the imports started
