import sys

from .client import run

sys.exit(run())
