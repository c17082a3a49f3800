"""NCCL_DEBUG=INFO parser on real logs (corpus 16, 19, 41); facts read off the files by hand."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from xpuperf.calibrate.nccllog import has_nccl_lines, parse_lines, read_nccl_log
from xpuperf.calibrate.nccllog_checks import evaluate, nccl_findings
from xpuperf.calibrate.nccllog_rings import ring_crossings, transport_summary
from xpuperf.errors import InputError

from .conftest import DATA, FILES

LOG41 = DATA / "calibrate_nccllog_41" / "41_nccllog_2node-16rank-ib-channels-trees-excerpt.txt"


def codes(log) -> list[str]:
    return sorted(f.code for f in nccl_findings(log))


def test_corpus16_two_t4_nodes_over_efa() -> None:
    log = read_nccl_log(FILES["eks_efa_t4"])
    assert (log.version, log.cuda) == ("2.12.7", "cuda11.4")
    assert log.network == ["AWS Libfabric"]
    assert log.provider == "efa"
    assert log.env["NCCL_SHM_DISABLE"][0] == "0"
    w = log.world
    assert w.nranks == 2
    assert len(log.comms) == 1
    assert w.hosts == ["test-nccl-efa-worker-0", "test-nccl-efa-worker-1"]
    assert (w.ranks[1].cuda_dev, w.ranks[1].bus_id) == (0, "f5000")
    assert w.n_channels == 2
    assert w.rings == {0: [0, 1], 1: [0, 1]}
    # "Channel 00/0 : 0[35000] -> 1[f5000] [send] via NET/AWS Libfabric/0": no /GDRDMA
    assert transport_summary(w) == [
        {"scope": "inter", "transport": "NET/AWS Libfabric", "connections": 4}
    ]
    assert [(r.cross_node_edges, r.minimum) for r in ring_crossings(w)] == [(2, 2), (2, 2)]
    assert w.trees[(0, 0)] == ([1, -1, -1], -1)  # "Trees [0] 1/-1/-1->0->-1"
    # GPUDirect RDMA absent, but nothing in the log says the NIC could do it: info, not warning
    found = {f.code: f for f in nccl_findings(log)}
    assert {c: f.severity.value for c, f in found.items()} == {
        "XP650": "info", "XP653": "info", "XP659": "info"
    }  # fmt: skip
    assert "4 of 4" in found["XP653"].message
    # issue 16: GPUDirect RDMA is not_checked (the log cannot tell), so XP650 leaves it out
    checks = {c.name: c.status.value for c in evaluate(log)[1]}
    assert checks["nccl.gdr"] == "not_checked"
    assert checks["nccl.network"] == "clean"
    assert "GPUDirect" not in found["XP650"].message
    assert "GPUDirect RDMA between nodes" in found["XP659"].message


def test_corpus19_p4d_sixteen_ranks_rings_and_transports() -> None:
    log = read_nccl_log(FILES["p4d_old"])
    assert log.version == "2.9.9"
    assert log.env["NCCL_TOPO_FILE"][0].endswith("p4d-24xl-topo.xml")
    w = log.world
    assert w.nranks == 16
    assert w.n_channels == 8
    assert len(w.rings) == 8
    assert w.hosts == ["nccl-tests-efa-16-worker-0", "nccl-tests-efa-16-worker-1"]
    assert sorted(r for r, i in w.ranks.items() if i.host == w.hosts[1]) == list(range(8, 16))
    assert (w.ranks[10].cuda_dev, w.ranks[10].bus_id) == (2, "201c0")
    assert w.rings[1] == [0, 3, 10, 15, 14, 13, 12, 9, 8, 11, 2, 7, 6, 5, 4, 1]
    # ring 01 leaves worker-0 at 3→10 and comes back at 11→2: 2 crossings = 2 hosts
    assert all((r.cross_node_edges, r.minimum) == (2, 2) for r in ring_crossings(w))
    labels = {(c.src, c.dst): c.label for c in w.connections.values()}
    assert labels[(0, 7)] == "P2P/IPC/read"
    assert labels[(1, 8)] == "NET/AWS Libfabric/GDRDMA"
    assert w.trees[(2, 1)] == ([3, 10, -1], -1)  # "Trees … [1] 3/10/-1->2->-1"
    summary = {(t["scope"], t["transport"]) for t in transport_summary(w)}
    assert summary == {("intra", "P2P/IPC/read"), ("inter", "NET/AWS Libfabric/GDRDMA")}
    # no 'Pattern …' graph-search lines in this log: the NIC-affinity check is not_checked
    assert codes(log) == ["XP650", "XP659"]
    checks = {c.name: c for c in evaluate(log)[1]}
    assert checks["nccl.nic_affinity"].status.value == "not_checked"
    assert "NCCL_DEBUG_SUBSYS=INIT,GRAPH" in checks["nccl.nic_affinity"].evidence
    # grep -c 'NET/AWS' on the file: 64 lines = 32 distinct connections (each printed by its
    # [send] and its [receive] side), 4 per channel (2 ring + 2 tree edges) x 8 channels
    assert checks["nccl.gdr"].evidence.startswith("32 of 32 inter-node connection(s) use GDRDMA")
    assert checks["nccl.p2p"].status.value == "clean"


def test_corpus41_excerpt_hosts_inferred_from_nnodes() -> None:
    log = read_nccl_log(LOG41)
    assert log.version is None
    w = log.world
    assert (w.nranks, w.nnodes, w.local_ranks, w.n_channels) == (16, 2, 8, 8)
    assert sorted(w.rings) == [0, 1, 2, 3, 4]  # the excerpt shows channels 00–04 of 8
    assert w.rings[0] == [0, 5, 4, 7, 6, 3, 2, 1, 8, 13, 12, 15, 14, 11, 10, 9]
    assert w.ranks[6].host == "node01"
    assert not w.ranks[6].host_inferred
    assert w.ranks[12].host_inferred
    assert w.ranks[0].host == "node01"
    assert ring_crossings(w)[0].cross_node_edges == 2  # node hop after position 8
    assert w.trees[(1, 1)] == ([-1, -1, -1], 0)
    assert codes(log) == ["XP650", "XP659"]  # clean, but no transport lines to check


def test_gz_and_prefixes_and_no_prefix(tmp_path: Path) -> None:
    text = (
        "2024-05-01T10:00:00.123Z [1,0]<stdout>:hostA:11:12 [0] NCCL INFO comm 0x1 rank 0 "
        "nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
        "3: hostB:21:22 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 2000 - Init "
        "COMPLETE\n"
        "NCCL INFO Channel 00/01 :    0   1\n"
    )
    p = tmp_path / "nccl.log.gz"
    p.write_bytes(gzip.compress(text.encode()))
    assert has_nccl_lines(p)
    log = read_nccl_log(p)
    assert log.world.hosts == ["hostA", "hostB"]
    assert log.world.rings == {0: [0, 1]}


def test_no_nccl_lines_is_an_input_error(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("step 1 loss 2.0\nstep 2 loss 1.9\n")
    assert not has_nccl_lines(p)
    with pytest.raises(
        InputError, match=r"train\.log: no 'NCCL INFO' or 'NCCL WARN' line.*NCCL_DEBUG=INFO"
    ):
        read_nccl_log(p)
    with pytest.raises(InputError, match="cannot read"):
        read_nccl_log(tmp_path / "missing.log")


def test_communicators_kept_apart_by_comm_id() -> None:
    # world (4 ranks) and a 2-rank sub-communicator initialised on other threads
    lines = [
        f"h{r // 2}:1{r}:5 [{r % 2}] NCCL INFO comm 0x{r} rank {r} nranks 4 cudaDev {r % 2} "
        "busId 0 commId 0xaaa - Init START"
        for r in range(4)
    ]
    lines += ["h0:10:5 [0] NCCL INFO Channel 00/01 :    0   1   2   3"]
    lines += [
        f"h0:1{r}:7 [{r}] NCCL INFO comm 0x9{r} rank {r} nranks 2 cudaDev {r} busId 0 "
        "commId 0xbbb - Init START"
        for r in range(2)
    ]
    lines += ["h0:10:7 [0] NCCL INFO Channel 00/01 :    0   1"]
    log = parse_lines(lines)
    assert [c.key for c in log.comms] == ["commId 0xaaa", "commId 0xbbb"]
    assert log.world.rings == {0: [0, 1, 2, 3]}
    assert log.comms[1].rings == {0: [0, 1]}
    assert log.world.hosts == ["h0", "h1"]


def test_comm_lines_with_and_without_comm_id_are_one_communicator() -> None:
    # NCCL 2.2x: "Init START" with commId, then "comm … nRanks … nNodes" without it (same
    # pointer), then "Init COMPLETE" with commId again; and the reverse order
    def lines(first_with_id: bool) -> list[str]:
        out = []
        for r in range(4):
            host = f"n{r // 2}:{r}:9 [{r % 2}] NCCL INFO "
            with_id = f"comm 0x{r}f rank {r} nranks 4 cudaDev {r % 2} busId 0 commId 0xc1 - Init"
            plain = f"comm 0x{r}f rank {r} nRanks 4 nNodes 2 localRanks 2 localRank {r % 2}"
            out += [host + with_id + " START", host + plain] if first_with_id else [host + plain]
            out.append(host + "Channel 00/01 :    0   1   2   3")
            out.append(host + with_id + " COMPLETE")
        return out

    for first in (True, False):
        log = parse_lines(lines(first))
        assert [c.key for c in log.comms] == ["commId 0xc1"]
        assert (log.world.nnodes, log.world.local_ranks) == (2, 2)
        assert log.world.hosts == ["n0", "n1"]
        assert log.world.rings == {0: [0, 1, 2, 3]}


def test_out_of_range_rank_ids_are_skipped_and_counted() -> None:
    # break-it regressions: a ring rank of 10**21 was reported as the world's size, and
    # nRanks 99999999999 was taken as is; both exceed 1,000,000 cards (topology MAX_CARDS)
    p = "h:1:1 [0] NCCL INFO "
    log = parse_lines(
        [
            p + "comm 0x1 rank 0 nranks 4 cudaDev 0 busId 1000 - Init COMPLETE",
            p + "Channel 00/02 :    0   1   1000000000000000000000   3",  # > cap: skipped
            p + "comm 0x2 rank 0 nRanks 99999999999 cudaDev 0",  # > cap: skipped
            p + "comm 0x3 rank 7 nranks 4 cudaDev 0",  # rank >= nranks: skipped
            p + "comm 0x1 rank 0 nranks 4 cudaDev 0 busId 1000",  # announces comm 0x1
            p + "Channel 01/02 :    0   1   9   3",  # 9 >= nranks 4: skipped when applied
            p + "Channel 00/02 :    0   1   2   3",  # kept
        ]
    )
    (w,) = log.comms
    assert (w.nranks, w.rings, sorted(w.ranks)) == (4, {0: [0, 1, 2, 3]}, [0])
    (msg,) = log.warnings
    assert msg.startswith("skipped 4 NCCL INFO line(s)")
    assert "(first at line 2)" in msg


def test_valid_log_has_no_reader_warning() -> None:
    assert read_nccl_log(LOG41).warnings == []
