"""Peers side by side: MemPalace, taOSmd, engram, Synapse and mnemon on the same units, questions and scoring.

`protocols` (the scoring, pure Python) is what the test suite imports; `systems` and `harness` import the peers'
packages, installed only in the peers' own venv (benchmarks/peers/README.md).
"""
