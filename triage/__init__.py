"""triage: read an LLM RL run's logs, say what failed, show the evidence, name the knob to inspect."""

__version__ = "0.1.0"
