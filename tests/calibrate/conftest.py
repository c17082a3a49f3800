"""Real nccl-tests outputs (copied verbatim from ../shared/corpus) and helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent.parent / "data"

FILES = {
    # corpus 16: OpenMPI-tagged, NCCL INFO + "Launch mode" inside the table, 0-byte rows
    "eks_efa_t4": DATA
    / "calibrate_eks_efa_t4"
    / "16_nccltests_eks-efa-2node-t4-mpirun-tagged-with-nccl-info.txt",
    # corpus 17: orted launch lines, trailing space after Avg bus bandwidth, 512 MiB–8 GiB
    "k8s_h100": DATA
    / "calibrate_k8s_h100"
    / "17_nccltests_k8s-mpijob-2node-16xh100-orted-launch.txt",
    # corpus 19: NCCL 2.9.9 init log, then the OLD table layout (no root, error column)
    "p4d_old": DATA
    / "calibrate_p4d_old_format"
    / "19_nccllog_aws-p4d-efa-2node-16rank-rings-trees-plus-nccltests-old-format.txt",
    # corpus 42: no preamble, last row cut after the out-of-place busbw
    "crossnic0": DATA
    / "calibrate_crossnic0_partial"
    / "42_nccltests_crossnic0-4gpu-per-node-no-preamble-partial-row.txt",
}


@pytest.fixture(params=sorted(FILES))
def real_file(request) -> tuple[str, Path]:
    return request.param, FILES[request.param]
