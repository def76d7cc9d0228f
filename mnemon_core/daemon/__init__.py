"""The resident engine of a data directory: the `mnemon` entry point that hands a call to it (client.py), the
engine as its clients see it (resident.py: where it lives, whom to trust, the messages) and the engine itself
(engine.py).

Empty on purpose: the client is imported on every agent turn and must stay light.
"""
