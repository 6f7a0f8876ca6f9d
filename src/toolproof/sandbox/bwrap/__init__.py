"""The bwrap backend's mechanics: bubblewrap, and the spawner that starts its commands.

Map of the package (what every backend promises is ``toolproof.sandbox._contract``)::

    _backend        BwrapSandbox (@sandbox("bwrap")): the bwrap command line, the probe
    _seccomp        the seccomp filter bwrap loads, a classic BPF program built once
    _spawner_slot   which command gets the sandbox's spawner (the Lease of _launch)
    _spawner        the harness side of the spawner: its process, requests, children
    _spawner_main   the spawner itself (root, stdlib only, run as python -I -S)
    _exec_helper    the C exec helper the spawner starts commands through (built once)
    _sandbox_cgroup the cgroup reused by every command of one sandbox

Nothing here is imported by the shared modules of ``toolproof.sandbox``: the
launcher there drives a ``Lease`` that ``_spawner_slot`` implements.
"""
