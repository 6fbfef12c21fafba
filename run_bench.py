#!/usr/bin/env python3
"""Entry point: `python run_bench.py --variant all` (see README.md)."""
import sys

from harness.cli import main

if __name__ == "__main__":
    sys.exit(main())
