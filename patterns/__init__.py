"""The rule library, shipped inside the wheel as triage.patterns_data (YAML files only)."""
