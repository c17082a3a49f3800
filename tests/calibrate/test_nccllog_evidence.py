"""NCCL-log verdicts that follow the evidence (QA pass of issue 16): the host without GPUDirect
RDMA named, one-host logs, WARN-only logs with host prefixes, RCCL version lines and the wording
of quotes and settings. Samples in tests/data/nccllog_*; expected values counted by hand from
them (comments say how)."""

from __future__ import annotations

import io

from rich.console import Console

from xpuperf.calibrate.nccllog import parse_lines, read_nccl_log
from xpuperf.calibrate.nccllog_checks import diagnose, evaluate
from xpuperf.calibrate.nccllog_warn import clip
from xpuperf.report.nccl_section import render_nccl, to_dict

from .conftest import DATA

GDR_ONE_HOST = DATA / "nccllog_gdr_one_host_missing/job.log"


def checks(log) -> dict:
    return {c.name: c for c in evaluate(log, "t.log")[1]}


def by_code(log) -> dict:
    return {f.code: f for f in evaluate(log, "t.log")[0]}


def header(path) -> str:
    buf = io.StringIO()
    render_nccl(diagnose([path]), Console(file=buf, width=400, color_system=None))
    return buf.getvalue().splitlines()[0]


# --- GPUDirect RDMA missing on one host ------------------------------------------------------


def test_host_without_gdrdma_is_named_and_breaks_uniformity() -> None:
    # 6 ranks, 2 per host (A: 0 1, B: 2 3, C: 4 5), ring 0..5; inter-node edges 1->2, 3->4, 5->0
    # printed by both ends = 6 ends; nodeC's two ends (3->4 [receive], 5->0 [send]) lack /GDRDMA
    log = read_nccl_log(GDR_ONE_HOST)
    found = by_code(log)
    f = found["XP653"]
    assert f.severity.value == "warning"  # PIX path and HCAs listed: GDR expected
    assert (f.data["without_gdr"], f.data["net_connections"]) == (2, 6)
    assert f.data["hosts_without_gdr"] == ["nodeC"]
    assert f.data["hosts_with_gdr"] == ["nodeA", "nodeB"]
    assert (
        "the ends without it are on host nodeC, while hosts nodeA, nodeB use GDRDMA on every "
        "inter-node end: look at that host first"
    ) in f.message
    # nodeC prints {inter NET/IB, intra P2P/IPC/read}; nodeA and nodeB {inter NET/IB/GDRDMA, …}
    u = found["XP658"]
    assert u.data["hosts"] == ["nodeC"]
    assert "1 of 3 host(s) use different transports than the others (nodeC: inter NET/IB, " in (
        u.message
    )
    st = checks(log)
    assert st["nccl.gdr"].status.value == "problem"
    assert st["nccl.gdr"].evidence.endswith("; without it on nodeC")
    assert st["nccl.uniform"].status.value == "problem"
    assert st["nccl.uniform"].codes == ("XP658",)


def test_two_hosts_one_without_gdrdma_names_both_transport_sets() -> None:
    # the QA shape: 2 hosts, A's ends have /GDRDMA, B's do not; no majority, so both are listed
    h = {0: "A", 1: "A", 2: "B", 3: "B"}

    def line(r: int, msg: str) -> str:
        return f"{h[r]}:{10 + r}:{20 + r} [{r % 2}] NCCL INFO {msg}"

    lines = [line(0, "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>")]
    lines += [line(r, f"comm 0x{r} rank {r} nranks 4 cudaDev {r % 2} busId {r}000") for r in h]
    lines += [
        line(0, "Channel 00/0 : 3[3000] -> 0[0] [receive] via NET/IB/0/GDRDMA"),
        line(1, "Channel 00/0 : 1[1000] -> 2[2000] [send] via NET/IB/0/GDRDMA"),
        line(2, "Channel 00/0 : 1[1000] -> 2[2000] [receive] via NET/IB/0"),
        line(3, "Channel 00/0 : 3[3000] -> 0[0] [send] via NET/IB/0"),
    ]
    found = by_code(parse_lines(lines))
    assert found["XP653"].data["hosts_without_gdr"] == ["B"]
    assert "while host A uses GDRDMA" in found["XP653"].message
    assert found["XP658"].data["hosts"] == ["A", "B"]
    assert "the 2 hosts use different transports (A: inter NET/IB/GDRDMA; B: inter NET/IB)" in (
        found["XP658"].message
    )


def test_every_host_with_gdrdma_stays_clean() -> None:
    text = GDR_ONE_HOST.read_text().replace("via NET/IB/0\n", "via NET/IB/0/GDRDMA\n")
    text = text.replace("via NET/IB/1\n", "via NET/IB/1/GDRDMA\n")
    log = parse_lines(text.splitlines())
    st = checks(log)
    assert (st["nccl.gdr"].status.value, st["nccl.uniform"].status.value) == ("clean", "clean")
    assert st["nccl.uniform"].evidence == "transport lines from 3 hosts compared"
    assert "XP653" not in by_code(log)
    assert "XP658" not in by_code(log)


# --- one host --------------------------------------------------------------------------------


def test_one_host_log_does_not_compare_nodes_or_count_crossings() -> None:
    # 4 ranks on dgx01 ([rankN]: torch prefixes), 2 ring orders, 4 P2P connections
    log = read_nccl_log(DATA / "nccllog_one_host/train.log")
    st = checks(log)
    assert st["nccl.uniform"].status.value == "not_checked"
    assert st["nccl.uniform"].evidence == "one host (dgx01): nothing to compare"
    assert st["nccl.ring_crossings"].status.value == "not_checked"
    assert st["nccl.ring_crossings"].evidence == "one host (dgx01): the 2 ring(s) cross no node"
    assert "NCCL_DEBUG_SUBSYS" not in st["nccl.network"].evidence  # one host: nothing to rerun
    assert st["nccl.p2p"].status.value == "clean"  # intra-node evidence is there
    found = by_code(log)
    assert "XP650" in found
    assert "XP656" not in found


# --- WARN-only log with host prefixes --------------------------------------------------------


def test_warn_only_log_counts_the_hosts_and_says_the_comm_lines_are_missing() -> None:
    # NCCL 2.26 '[date time] host:pid:tid [dev] file:line NCCL WARN' lines from gn05, gn06, gn07
    path = DATA / "nccllog_warn_only_2.26/stderr.log"
    log = read_nccl_log(path)
    assert log.hosts == ["gn05", "gn06", "gn07"]
    assert header(path) == (
        "NCCL 2.26.5 — no 'comm … rank R nranks N' lines (NCCL_DEBUG=INFO prints them), so the "
        "ranks' hosts are unknown; 3 host(s) in the line prefixes: gn05, gn06, gn07"
    )
    ev = checks(log)["nccl.network"].evidence
    assert ev.startswith(
        "no 'comm 0x… rank R nranks N' lines, so which rank runs on which of the 3 host(s) the "
        "line prefixes name (gn05, gn06, gn07) is unknown; rerun with NCCL_DEBUG=INFO"
    )
    assert "no 'host:pid:tid' prefix" not in ev
    assert checks(log)["nccl.uniform"].evidence == ev


def test_log_without_host_prefix_still_says_so() -> None:
    log = parse_lines(["NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000"])
    assert "no 'host:pid:tid' prefix" in checks(log)["nccl.network"].evidence


# --- RCCL ------------------------------------------------------------------------------------


def test_rccl_version_lines_of_every_form() -> None:
    # ROCm 4-5.3 '+hipX.Y', 5.4-6.2 '+hipX.Y branch:hash', 6.3+ 'RCCL version : V-hash' + HIP line
    for line, cuda in [
        ("RCCL version 2.10.3+hip4.3", "hip4.3"),
        ("0: RCCL version 2.18.3+hip6.0 HEAD:2f5e9b4", "hip6.0"),
        ("h:1:2 [0] NCCL INFO RCCL version 2.13.4+hip5.4 develop:7e1cbb4", "hip5.4"),
    ]:
        log = parse_lines([line, "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0"])
        assert (log.library, log.cuda) == ("RCCL", cuda)
    log = read_nccl_log(DATA / "nccllog_rccl_6.3/srun.log")
    assert (log.library, log.version, log.cuda) == ("RCCL", "2.21.5", "hip6.3")
    assert to_dict(diagnose([DATA / "nccllog_rccl_6.3/srun.log"]))["library"] == "RCCL"
    assert header(DATA / "nccllog_rccl_6.3/srun.log").startswith("RCCL 2.21.5 — 2 rank(s) on 1")


def test_nccl_stays_nccl() -> None:
    log = read_nccl_log(GDR_ONE_HOST)
    assert (log.library, log.version, log.cuda) == ("NCCL", "2.18.6", "cuda12.1")
    assert header(GDR_ONE_HOST).startswith("NCCL 2.18.6 — 6 rank(s) on 3 host(s)")


# --- wording ---------------------------------------------------------------------------------


def test_xp652_says_socket_ifname_is_not_set() -> None:
    h = {0: "A", 1: "B"}
    base = [
        f"{h[r]}:1{r}:2{r} [0] NCCL INFO comm 0x{r} rank {r} nranks 2 cudaDev 0 busId 1000"
        for r in h
    ]
    base += [
        "A:10:20 [0] NCCL INFO NET/IB : No device found.",
        "A:10:20 [0] NCCL INFO NET/Socket : Using [0]ens5:10.0.0.1<0>",
        "A:10:20 [0] NCCL INFO Channel 00/0 : 1[1000] -> 0[1000] [receive] via NET/Socket/0",
        "B:11:21 [0] NCCL INFO Channel 00/0 : 1[1000] -> 0[1000] [send] via NET/Socket/0",
    ]
    msg = by_code(parse_lines(base))["XP652"].message
    assert msg.endswith("NCCL_SOCKET_IFNAME is not set (NCCL chose ens5); set it to pick the TCP "
                        "interface")  # fmt: skip
    assert "=unset" not in msg
    env = "A:10:20 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ens5"
    msg = by_code(parse_lines([*base, env]))["XP652"].message
    assert msg.endswith("NCCL_SOCKET_IFNAME=ens5 picks the TCP interface")


def test_xp654_quotes_the_nccl_line_without_cutting_a_word() -> None:
    # the 2.26 NVLink P2P line (gn07) is 231 characters: quoted whole
    log = read_nccl_log(DATA / "nccllog_warn_only_2.26/stderr.log")
    msg = by_code(log)["XP654"].message
    assert "you can set NCCL_IGNORE_DISABLED_P2P=1.' (line 4" in msg


def test_clip_cuts_at_a_word_boundary() -> None:
    text = "P2P is disabled between NVLINK connected GPUs 1 and 0. This is probably due to hardware"
    assert clip(text, 200) == text
    assert (
        clip(text, 77)
        == "P2P is disabled between NVLINK connected GPUs 1 and 0. This is probably due…"
    )
    assert (
        clip(text, 80)
        == "P2P is disabled between NVLINK connected GPUs 1 and 0. This is probably due to…"
    )
    assert clip("x" * 50, 10) == "x" * 10 + "…"  # no space to cut at: cut at the limit
