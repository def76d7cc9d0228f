import sys

from .daemon.client import run

sys.exit(run())
