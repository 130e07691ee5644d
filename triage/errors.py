"""The one base of every error the user must act on: bad input, an invalid rule library or config, an output
that cannot be written, a baseline or report that cannot be read. The CLI catches it once, prints the message
as one line and exits 2 (exit 1 is kept for "findings at or above the gate")."""

from __future__ import annotations


class TriageError(Exception):
    """An error worded for the user: the message names the file and the problem."""

    exit_code = 2
