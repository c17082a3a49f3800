"""Who am I: rank, local rank, world size and node of the calling process (stdlib only).

Arguments win; otherwise the first environment variable set among those the usual launchers
export (torchrun / torch.distributed, Open MPI, MPICH/Intel MPI (PMI), Slurm):

============  =====================================================================
field         environment variables, first set wins
============  =====================================================================
rank          RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID
local_rank    LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID
world_size    WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS
node          ``socket.gethostname()``
============  =====================================================================

With no rank variable the local rank is taken as the rank (one node), else 0 (one process).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

RANK_VARS: tuple[str, ...] = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")
LOCAL_RANK_VARS: tuple[str, ...] = (
    "LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "SLURM_LOCALID",
)
WORLD_SIZE_VARS: tuple[str, ...] = (
    "WORLD_SIZE",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "SLURM_NTASKS",
)


class ProbeError(RuntimeError):
    """Misuse of the probe: a nested or unclosed phase/step, an unknown phase name, a bad rank.

    A programming error in the instrumented script, so it is not an
    :class:`xpuperf.errors.XpuperfError` (those are CLI input errors with exit codes).
    """


@dataclass(frozen=True)
class RankInfo:
    """Identity of one training process.

    Attributes:
        rank: global rank, 0-based.
        local_rank: rank within its node, or None when unknown.
        world_size: number of ranks, or None when unknown.
        node: host name of the node.
        source: where ``rank`` came from: ``"argument"``, an environment variable name,
            ``"local_rank"`` or ``"default"``.
    """

    rank: int
    local_rank: int | None
    world_size: int | None
    node: str
    source: str


def _from_env(env: Mapping[str, str], names: tuple[str, ...]) -> tuple[int | None, str | None]:
    """(value, variable) of the first variable set in ``env``; (None, None) if none is set.

    Raises:
        ProbeError: the first set variable is not a non-negative integer.
    """
    for name in names:
        raw = env.get(name)
        if raw is None or not raw.strip():
            continue
        try:
            value = int(raw.strip())
        except ValueError:
            value = -1
        if value < 0:
            raise ProbeError(
                f"environment variable {name}={raw!r} is not a non-negative integer; "
                "pass rank=/local_rank=/world_size= to the probe explicitly"
            )
        return value, name
    return None, None


def _check(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ProbeError(f"{name}={value!r} must be a non-negative integer")


def detect_rank(
    rank: int | None = None,
    *,
    local_rank: int | None = None,
    world_size: int | None = None,
    node: str | None = None,
    env: Mapping[str, str] | None = None,
) -> RankInfo:
    """Resolve the identity of this process: arguments first, then ``env`` (default
    ``os.environ``), see the module docstring.

    Raises:
        ProbeError: a non-integer or negative value, or ``rank >= world_size``.
    """
    env = os.environ if env is None else env
    for name, value in (("rank", rank), ("local_rank", local_rank), ("world_size", world_size)):
        _check(name, value)
    source = "argument"
    if local_rank is None:
        local_rank, _ = _from_env(env, LOCAL_RANK_VARS)
    if world_size is None:
        world_size, _ = _from_env(env, WORLD_SIZE_VARS)
    if rank is None:
        rank, var = _from_env(env, RANK_VARS)
        source = var or ""
        if rank is None and local_rank is not None:
            rank, source = local_rank, "local_rank"
        elif rank is None:
            rank, source = 0, "default"
    if world_size is not None and rank >= world_size:
        raise ProbeError(
            f"rank {rank} (from {source}) is not below the world size {world_size}; "
            "check RANK and WORLD_SIZE or pass rank= explicitly"
        )
    return RankInfo(
        rank=rank,
        local_rank=local_rank,
        world_size=world_size,
        node=node if node else socket.gethostname(),
        source=source,
    )
