"""Build the optional C prefilter (triage/scan/_linescan.c). If it cannot be compiled, triage still works:
triage/scan/prefiltered.py then falls back to the pure-Python scanner (slower on large logs)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("triage.scan._linescan", ["triage/scan/_linescan.c"], optional=True,
                             extra_compile_args=["-O3"] if not __import__("sys").platform.startswith("win") else [])])
