#!/usr/bin/env python3
"""Thin shim so ``./kbindex.py ...`` works from a checkout without installing."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kb_indexer.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
