"""What the supervising parent and the supervised session say to each other.

Both sides import this, and neither imports the other's module: the session's side
is ``supervisor.py``, the parent's ``supervisor_parent.py``.
"""

from __future__ import annotations

# The environment variable that makes a fresh interpreter the supervised session:
# "<socket fd>:<parent pid>:<the parent's threads>" (a forked session gets the same
# text from session_start.start). Removed at once, so nothing the session starts sees it.
CHILD_ENV = "PYTEST_EXPORTCHECK_SUPERVISOR"
# The messages the child sends: "item <nodeid>", "fatal <message>", "end <token> <status>".
ITEM, FATAL, END = "item ", "fatal ", "end "
UNKNOWN_STATUS = "?"  # no session began (a usage error in configure): any exit status
MAX_MESSAGE = 8192  # one datagram; a longer line is cut
