"""Rank and node counts from the launch lines a log echoes (``mpirun``, ``srun``, ``horovodrun``,
``torchrun``, ``deepspeed``, ``WORLD_SIZE=``): used by ``calibrate`` (nccl-tests, hccl_demo) and
by ``read_logs`` for the world size of a job-level training log (:func:`world_from_lines`).

A log may list only some ranks (``# Rank`` lines cut with ``...``), so the count is read from
what the launcher was told: ``mpirun -np 16`` / ``-n 16`` / ``--np 16``, ``srun -n 16`` /
``--ntasks=16``, hosts with slots (``--host a:8,b:8``, ``-H a:8,b:8``), ranks per node
(``-npernode 8``, ``--npernode 8``, ``-N 8`` of OpenMPI, ``--map-by ppr:8:node``,
``--ntasks-per-node=8``), and the nodes of ``srun -N 2`` / ``--nodes=2``. PyTorch launchers
(``torchrun``, ``python -m torch.distributed.run|launch``) and DeepSpeed's give processes per
node × nodes (``--nproc_per_node=8 --nnodes=2``, ``--num_gpus 8 --num_nodes 2``); a
``WORLD_SIZE=16`` assignment gives the processes directly.

:func:`launch_counts` reads one line; :class:`Launch` merges what several lines said (the first
value of each kind wins). Never raises on content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_LAUNCHERS = re.compile(r"(?:^|[\s/])(mpirun|mpiexec|srun|orterun|prterun|horovodrun)(?:\s|$)")
_TORCH = re.compile(r"(?:^|[\s/])(?:torchrun|torch\.distributed\.(?:run|launch)|deepspeed)(?:\s|$)")
_NPROC = re.compile(r"(?:^|\s)(?:--nproc[_-]per[_-]node|--num[_-]gpus)(?:\s+|=)(\d+)(?=\s|$)")
_NNODES = re.compile(r"(?:^|\s)(?:--nnodes|--num[_-]nodes)(?:\s+|=)(\d+)(?=\s|$)")
_WORLD = re.compile(r"(?:^|[\s;])(?:export\s+)?WORLD_SIZE=(\d+)(?=\s|;|$)")
_NP = re.compile(r"(?:^|\s)(?:-np|--np|-n|--ntasks)(?:\s+|=)(\d+)(?=\s|$)")
_PER_NODE = re.compile(
    r"(?:^|\s)(?:-npernode|--npernode|--ntasks-per-node)(?:\s+|=)(\d+)(?=\s|$)"
    r"|ppr:(\d+):node"
)
_OMPI_N = re.compile(r"(?:^|\s)-N\s+(\d+)(?=\s|$)")  # OpenMPI: per node; srun: nodes
_SRUN_NODES = re.compile(r"(?:^|\s)(?:-N|--nodes)(?:\s+|=)(\d+)(?=\s|$)")
_HOSTS = re.compile(r"(?:^|\s)(?:--host|-host|-H)(?:\s+|=)(\S+)")


@dataclass
class Launch:
    """What launch lines said: ``np`` processes, ``per_node`` ranks per node, ``nodes``,
    ``hosts`` (names, in order) with their ``slots`` (None when a host gave none), and the
    1-based ``line`` of the first launch line."""

    np: int | None = None
    per_node: int | None = None
    nodes: int | None = None
    hosts: list[str] = field(default_factory=list)
    slots: list[int | None] = field(default_factory=list)
    line: int | None = None

    def update(self, text: str, lineno: int) -> None:
        """Merge what ``text`` (one line) says, when it is a launcher command line."""
        if self.np is None and (w := _WORLD.search(text)):
            self.np, self.line = int(w.group(1)), self.line or lineno
        if _TORCH.search(text):
            self._torch(text, lineno)
            return
        m = _LAUNCHERS.search(text)
        if not m:
            return
        launcher = m.group(1)
        got = False
        if self.np is None and (n := _NP.search(text)):
            self.np, got = int(n.group(1)), True
        if self.per_node is None and (n := _PER_NODE.search(text)):
            self.per_node, got = int(n.group(1) or n.group(2)), True
        if launcher == "srun":
            if self.nodes is None and (n := _SRUN_NODES.search(text)):
                self.nodes, got = int(n.group(1)), True
        elif self.per_node is None and (n := _OMPI_N.search(text)):
            self.per_node, got = int(n.group(1)), True
        if not self.hosts and (h := _HOSTS.search(text)):
            for item in h.group(1).split(","):
                name, _, slots = item.partition(":")
                if name:
                    self.hosts.append(name)
                    self.slots.append(int(slots) if slots.isdigit() else None)
            got = got or bool(self.hosts)
        if got and self.line is None:
            self.line = lineno

    def _torch(self, text: str, lineno: int) -> None:
        """``torchrun --nproc_per_node=8 --nnodes=2`` / ``deepspeed --num_gpus 8 --num_nodes 2``:
        processes per node and nodes (one node when ``--nnodes`` is absent; an elastic range
        ``--nnodes=1:4`` says nothing)."""
        if re.search(r"--nnodes(?:\s+|=)\d+:\d+", text):
            return
        if self.per_node is None and (n := _NPROC.search(text)):
            self.per_node = int(n.group(1))
            if self.nodes is None:
                got = _NNODES.search(text)
                self.nodes = int(got.group(1)) if got else 1
            self.line = self.line or lineno

    @property
    def ranks(self) -> int | None:
        """Processes launched: ``-np``, else the hosts' slots summed (all given), else
        nodes × ranks per node."""
        if self.np is not None:
            return self.np
        if self.slots and all(s is not None for s in self.slots):
            return sum(s for s in self.slots if s is not None)
        if self.nodes is not None and self.per_node is not None:
            return self.nodes * self.per_node
        return None

    def node_count(self, ranks: int | None) -> tuple[int | None, str]:
        """Nodes and where the figure came from: the host list, ``srun -N``, or ranks divided
        by ranks per node (only when it divides)."""
        if self.hosts:
            return len(self.hosts), "hosts"
        if self.nodes is not None:
            return self.nodes, "launcher"
        if ranks is not None and self.per_node and ranks % self.per_node == 0:
            return ranks // self.per_node, "ranks per node"
        return None, ""


def world_from_lines(lines: list[str]) -> tuple[int, str] | None:
    """The processes a launch line in ``lines`` started, and which line said it ("mpirun
    -np / horovodrun -np / torchrun --nproc_per_node × --nnodes / WORLD_SIZE= (line N)"), or
    None when no line does."""
    got = Launch()
    for i, text in enumerate(lines, 1):
        got.update(text, i)
    n = got.ranks
    if n is None or n < 1:
        return None
    return n, f"launch line {got.line}"
