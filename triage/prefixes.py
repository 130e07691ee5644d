"""Line prefixes several stages recognise, written once.

Ray puts `(ActorName pid=N, ip=A.B.C.D)` in front of every line a worker prints to the driver's log (Ray 2.x
`log_monitor`; the ip part appears when the worker runs on another node, `pid=` is absent on some driver lines).
Discovery counts the actors of a file, the scanner splits the prefix off to find a line's process, the C
prefilter's interface looks for several of them in a chunk, and templates mask it.
"""

from __future__ import annotations

RAY_ACTOR = r"\((?P<actor>[A-Za-z_][\w.:-]*)(?: pid=(?P<pid>\d+))?(?:, ip=(?P<ip>[0-9a-fA-F.:]+))?\)"
