"""Guards around user code: what a model may do to the run, and what the run does about it.

Stages and time limits (``stages.py``), failures and their messages (``failures.py``),
process-wide state a model may leave changed (``process_state.py``,
``torch_namespaces.py``, ``child_processes.py``, ``thread_origins.py``), exits that
bypass Python (``user_exits.py``, ``supervisor.py``, ``supervisor_parent.py``,
``session_start.py``, their protocol ``supervision_channel.py``), a Python that
imported torch alone, forked per run of the user's code in it (``fork_server.py``:
the fresh process of a saved program's load, a reproduction's run), memory
(``memory_limit.py``, ``memory_return.py``, ``allocation.py``), workers that die
(``crashes.py``; a process's end in words, ``exit_status.py``), and what every item
runs under (``item_guards.py``).

May import: ``spec/``, ``recordings/`` (atomic writes), ``parallel/gpu_sharing`` (sizes)
and torch; nothing of the items, the eager side, captures or checks.
"""
