"""NCCL debug logs of several versions (samples written in the formats of NCCL 2.4 / 2.18 / 2.21 /
2.26+ and RCCL, tests/data/nccllog_*), the per-check verdicts (issue 16) and WARN findings.
Expected values are counted by hand from the sample files (comments say how)."""

from __future__ import annotations

from pathlib import Path

from xpuperf.calibrate.nccllog import has_nccl_lines, parse_lines, read_nccl_log
from xpuperf.calibrate.nccllog_checks import diagnose, evaluate
from xpuperf.calibrate.nccllog_warn import classify, warn_counts
from xpuperf.report.nccl_section import to_dict

from .conftest import DATA


def one(folder: str) -> Path:
    (path,) = sorted((DATA / folder).iterdir())
    return path


def status(log) -> dict[str, str]:
    return {c.name: c.status.value for c in evaluate(log, "t.log")[1]}


def by_code(log) -> dict:
    return {f.code: f for f in evaluate(log, "t.log")[0]}


def test_gdr_disabled_for_hca_is_evidence_without_transport_lines() -> None:
    # NCCL 2.21 under torchrun ([defaultN]: prefix), FQDN hosts, RoCE HCAs, no 'via' lines
    log = read_nccl_log(one("nccllog_gdr_disabled_hca"))
    assert log.version == "2.21.5"
    assert log.world.hosts == ["gpu-a.cluster.local", "gpu-b.cluster.local"]
    assert (log.world.nnodes, log.world.local_ranks) == (2, 2)  # the "… MNNVL 0" comm line
    assert log.roce
    assert len(log.gdr_disabled) == 4  # 2 HCAs x 2 hosts
    assert log.world.connections == {}
    found = by_code(log)
    assert found["XP653"].severity.value == "warning"
    assert "Disabled for HCA 0 'mlx5_0' (+3 more" in found["XP653"].message
    assert "nvidia-peermem" in found["XP653"].message
    assert "NCCL_NET_GDR_LEVEL" in found["XP653"].message
    assert "XP650" not in found  # a problem: no blanket verdict
    st = status(log)
    assert st["nccl.gdr"] == "problem"
    assert st["nccl.network"] == "clean"  # 'Using network IB' on a 2-node communicator
    assert st["nccl.uniform"] == "not_checked"  # no transport lines


def test_gdr_enabled_lines_alone_are_clean_and_pxb_path_without_gdrdma_warns() -> None:
    h = {0: "a", 1: "b"}
    base = [
        f"{h[r]}:1{r}:2{r} [0] NCCL INFO comm 0x{r} rank {r} nranks 2 cudaDev 0 busId 1000"
        for r in range(2)
    ]
    enabled = (
        "a:10:20 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 1a000 / HCA 0 (distance 4 <= 4)"
    )
    assert status(parse_lines([*base, enabled]))["nccl.gdr"] == "clean"
    # NCCL 2.19 wording of a GPU-NIC distance reason (paths.cc): 6 = PHB > 4 = PXB
    far = "a:10:20 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 1a000 / HCA 0 (distance 6 > 4)"
    assert status(parse_lines([*base, far]))["nccl.gdr"] == "problem"
    # PXB GPU-NIC path (within the default NCCL_NET_GDR_LEVEL) and no /GDRDMA: warning
    pxb = "a:10:20 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 1, bw 12.0/12.0, type LOC/PXB, sameChannels 1"  # noqa: E501
    conn = "a:10:20 [0] NCCL INFO Channel 00/0 : 0[1000] -> 1[1000] [send] via NET/IB/0"
    f = by_code(parse_lines([*base, pxb, conn]))["XP653"]
    assert f.severity.value == "warning"
    assert "the GPU–NIC path is PXB" in f.message
    # without HCAs, GDR lines or a path type: info, and the check stays not_checked
    bare = parse_lines([*base, conn])
    assert by_code(bare)["XP653"].severity.value == "info"
    assert status(bare)["nccl.gdr"] == "not_checked"
    assert status(parse_lines(base))["nccl.gdr"] == "not_checked"  # no evidence at all


def test_nccl_2_4_sockets_libibverbs_warn_old_rings_trees() -> None:
    log = read_nccl_log(one("nccllog_sockets_no_verbs_2.4"))
    assert log.version == "2.4.8"
    w = log.world
    assert w.rings == {0: [0, 1, 2, 3], 1: [0, 1, 2, 3]}  # "Channel 00 :" without /NN
    assert w.n_channels is None
    assert w.trees[(0, 0)] == ([1, 2, -1], -1)  # 2.4 order: up->rank->kids
    assert w.trees[(0, 1)] == ([1, -1, -1], 2)
    labels = sorted({(c.src, c.dst, c.label) for c in w.connections.values()})
    assert labels == [(0, 1, "P2P/IPC"), (1, 2, "NET/Socket"), (2, 3, "P2P/IPC"),
                      (3, 0, "NET/Socket")]  # fmt: skip
    assert log.socket_ifs == ["eth0"]
    assert [(d.cuda_dev, d.kinds) for d in log.nic_distances] == [(0, ("PHB",)), (1, ("PHB",))]
    assert warn_counts(log) == [("Failed to open libibverbs.so[.1]", 2)]  # node-1 and node-2
    found = by_code(log)
    assert found["XP652"].severity.value == "warning"
    assert "Failed to open libibverbs.so[.1]" in found["XP652"].message
    assert "interface(s) eth0" in found["XP652"].message
    assert "NCCL_IB_HCA" in found["XP652"].message
    assert found["XP660"].severity.value == "warning"  # 2 nodes, no RDMA connection
    assert "XP665" not in found  # the libibverbs WARN is read by the network check
    st = status(log)
    assert st["nccl.network"] == "problem"
    assert st["nccl.gdr"] == "not_checked"  # sockets: GPUDirect RDMA does not apply
    assert st["nccl.p2p"] == "clean"
    assert st["nccl.nic_affinity"] == "clean"  # PHB from the 2.4 NIC distance lines
    assert st["nccl.warn"] == "clean"


def test_warn_only_log_is_accepted_and_each_warn_class_is_a_finding(tmp_path: Path) -> None:
    path = one("nccllog_warn_only")
    assert has_nccl_lines(path)
    log = read_nccl_log(path)
    assert (log.info_lines, log.warn_lines) == (0, 6)
    assert log.hosts == ["gpu07.dc-1.example.com", "gpu08.dc-1.example.com"]
    found = by_code(log)
    assert {c: f.severity.value for c, f in found.items()} == {
        "XP661": "error", "XP662": "error", "XP663": "error", "XP665": "warning",
        "XP659": "info",
    }  # fmt: skip
    assert "×2; first at nccl_warn.log:2 on gpu07.dc-1.example.com" in found["XP661"].message
    assert found["XP665"].data["messages"][0]["count"] == 2
    st = status(log)
    assert st["nccl.warn"] == "problem"
    assert all(v == "not_checked" for k, v in st.items() if k != "nccl.warn")
    doc = to_dict(diagnose([path]))
    assert [w["count"] for w in doc["warn_lines"]] == [2, 2, 1, 1]
    assert {c["name"]: c["status"] for c in doc["checks"]} == st
    # a file with neither INFO nor WARN is still refused
    p = tmp_path / "x.log"
    p.write_text("NCCL INFOx\n")
    assert not has_nccl_lines(p)


def test_p2p_disabled_between_geforce_cards_ansi_and_torchrun_prefix() -> None:
    log = read_nccl_log(one("nccllog_p2p_disabled_geforce"))
    assert log.world.hosts == ["ws-3090"]  # ANSI colour codes removed before the prefix
    assert len(log.p2p_off) == 2
    f = by_code(log)["XP654"]
    assert f.message.startswith("t.log: 4 of 4 intra-node connection(s) go through host memory")
    assert "GeForce" in f.message
    assert f.data["p2p_disabled_lines"] == 2
    st = status(log)
    assert st["nccl.p2p"] == "problem"
    assert st["nccl.network"] == "not_checked"  # one host
    # the NVLink variant is a WARN (paths.cc) and names a hardware fault
    nv = parse_lines(
        [
            "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000",
            "",
            "h:1:2 [0] graph/paths.cc:323 NCCL WARN P2P is disabled between NVLINK connected "
            "GPUs 1 and 0. This should not be the case given their connectivity",
        ]
    )
    assert "hardware or driver fault" in by_code(nv)["XP654"].message
    assert classify(nv.warns[0].text) is None


def test_rccl_ring_links_rebuild_the_ring_order() -> None:
    # srun -l prefixes, RCCL's ' comm 0x… nRanks 04' tails; only per-rank 'Ring NN : p -> r -> n'
    log = read_nccl_log(one("nccllog_rccl_ring_links"))
    assert log.version == "2.18.3"
    w = log.world
    # channel 1 links: 0->2, 2->1, 1->3, 3->0 => order 0 2 1 3: a01 a02 a01 a02 = 4 crossings
    assert w.rings == {0: [0, 1, 2, 3], 1: [0, 2, 1, 3]}
    labels = sorted({c.label for c in w.connections.values()})
    assert labels == ["NET/IB/GDRDMA", "P2P/IPC"]
    f = by_code(log)["XP656"]
    assert "channel 01 crosses 4 times, threshold 2" in f.message
    st = status(log)
    assert (st["nccl.ring_crossings"], st["nccl.gdr"], st["nccl.uniform"]) == (
        "problem", "clean", "clean",
    )  # fmt: skip


def test_ring_fallback_warns_of_2_4_and_2_2x() -> None:
    def log(msg: str):
        return parse_lines(
            [
                "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000",
                "h:1:2 [0] NCCL INFO Channel 00/01 :    0   1",
                "",
                f"h:1:2 [0] {msg}",
            ]
        )

    old = log("misc/rings.cc:361 NCCL WARN Could not create rings, falling back on simple ring")
    assert "XP657" in by_code(old)
    assert status(old)["nccl.ring_construction"] == "problem"
    new = log("graph/search.cc:1024 NCCL WARN Could not find a path for pattern 4, falling back "
              "to simple order")  # fmt: skip
    assert by_code(new)["XP657"].data["fallbacks"] == 1
    assert status(new)["nccl.warn"] == "clean"  # read by the ring-construction check
    # a WARN about an internal ring error is XP666 under the same check
    bad = log("graph/rings.cc:38 NCCL WARN Error : ring 2 does not loop back to start (7 != 2)")
    assert by_code(bad)["XP666"].severity.value == "error"
    assert status(bad)["nccl.ring_construction"] == "problem"


def test_healthy_log_verdict_lists_only_clean_checks() -> None:
    from .test_nccllog_findings import job

    found = by_code(parse_lines(job()))
    assert set(found) == {"XP650"}
    msg = found["XP650"].message
    # 8 checks: all clean in the synthetic job (it has transports, rings, a Pattern line)
    assert "no misconfiguration found by the 8 check(s)" in msg
    assert "0 check(s) not checked" in msg
