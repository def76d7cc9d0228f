"""Several agent processes writing one store at once queue on the write lock instead of failing."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

WRITER = """
import sys
from mnemon_core import Memory
m = Memory()
for i in range(100):
    r = m.remember(f"process {sys.argv[1]} memory {i} about the deploy pipeline", source=f"p{sys.argv[1]}")
    assert r.action == "added"
"""


def test_four_processes_hundred_remembers_each(data_dir) -> None:
    from mnemon_core import Memory

    Memory().status()  # create the store once, so the writers don't race on creating it
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(p)], env=env, stderr=subprocess.PIPE, text=True)
        for p in range(4)
    ]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errors
    m = Memory()
    assert m.status().total_insights == 400
    assert m.store.count_log() == 400
    # every writer's temporal backbone is intact: 99 links per source, both directions
    backbone = [e for e in m.store.iter_edges() if e.metadata.get("sub_type") == "backbone"]
    assert len(backbone) == 4 * 99 * 2
