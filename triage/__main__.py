from triage.cli import run

run()
