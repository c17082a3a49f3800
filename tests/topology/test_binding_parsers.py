"""Binding parsers: every sample in tests/data/topology_binding/ read into ranks and CPUs worked
out by hand from the lines; sniffing; file:line errors on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from xpuperf.errors import InputError, UsageError
from xpuperf.topology.binding import detect, read_binding

DATA = Path(__file__).resolve().parents[1] / "data" / "topology_binding"
N0 = tuple(range(12)) + tuple(range(24, 36))  # DGX-1V NUMA 0 (corpus 14)
N1 = tuple(range(12, 24)) + tuple(range(36, 48))


def sample(name: str) -> str:
    return str(DATA / name)


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("cpus_dgx1_exclusive.csv", "cpus"),
        ("ranks_dgx1_faults.yaml", "cpus"),
        ("numactl_show_torchrun_tee.txt", "numactl"),
        ("taskset_cp_srun_l.txt", "taskset"),
        ("slurm_cpu_bind_verbose.txt", "slurm"),
        ("openmpi4_report_bindings_map_by_socket.txt", "openmpi"),
        ("openmpi5_report_bindings.txt", "openmpi"),
        ("launcher_torchrun.yaml", "launcher"),
        ("launcher_numactl_wrappers.yaml", "launcher"),
    ],
)
def test_every_sample_is_sniffed(name: str, fmt: str) -> None:
    assert detect((DATA / name).read_text()) == fmt


def test_csv_quoted_cpu_lists() -> None:
    bf = read_binding(sample("cpus_dgx1_exclusive.csv"))
    assert [e.rank for e in bf.entries] == list(range(8))
    assert bf.entries[0].cpus == (0, 1, 2, 24, 25, 26)
    assert bf.entries[5].cpus == (15, 16, 17, 39, 40, 41)  # 12 + 3·1 … and +24
    assert (bf.entries[5].host, bf.entries[5].local_rank, bf.entries[5].line) == ("node01", 5, 8)


def test_csv_unquoted_last_column_and_tsv(tmp_path: Path) -> None:
    p = tmp_path / "b.csv"
    p.write_text("rank,membind,cpus\n0,1,0-3,8\n")
    (e,) = read_binding(p).entries
    assert (e.cpus, e.mem_nodes) == ((0, 1, 2, 3, 8), (1,))
    p.write_text("rank\tcpus\n0\t0 1 2\n")
    assert read_binding(p).entries[0].cpus == (0, 1, 2)


def test_yaml_list_with_lines_and_membind() -> None:
    bf = read_binding(sample("ranks_dgx1_faults.yaml"))
    assert [e.rank for e in bf.entries] == [0, 1, 2, 3, 4, 5, 6]
    assert bf.entries[1].cpus == tuple(range(24))
    assert bf.entries[6].mem_nodes == (0,)
    assert bf.entries[6].line == 9  # "- {rank: 6, …}" is line 9 of the file


def test_json_per_rank(tmp_path: Path) -> None:
    p = tmp_path / "b.json"
    p.write_text('[{"rank": 0, "cpus": [4, 5]}, {"local_rank": 1, "cpunodebind": "1"}]')
    a, b = read_binding(p).entries
    assert (a.rank, a.cpus) == (0, (4, 5))
    assert (b.rank, b.local_rank, b.cpu_nodes) == (None, 1, (1,))


def test_numactl_show_blocks_with_rank_tags() -> None:
    bf = read_binding(sample("numactl_show_torchrun_tee.txt"))
    assert [e.rank for e in bf.entries] == list(range(8))
    assert bf.entries[0].cpus == N0
    assert bf.entries[0].mem_nodes == (0,)
    assert bf.entries[3].cpus == N1
    assert bf.entries[3].mem_nodes == (1,)
    assert bf.entries[4].cpus == N0
    assert bf.entries[4].line == 25  # 6 lines per block: block 5 starts at line 25
    assert bf.notes == []


def test_numactl_show_untagged_blocks_by_order(tmp_path: Path) -> None:
    p = tmp_path / "show.txt"
    block = "policy: default\npreferred node: current\nphyscpubind: {}\ncpubind: 0 1\n"
    p.write_text(block.format("0 1") + "membind: 0 1\n" + block.format("2 3"))
    bf = read_binding(p, "numactl")
    assert [(e.rank, e.cpus, e.mem_nodes) for e in bf.entries] == [(0, (0, 1), None),
                                                                    (1, (2, 3), None)]  # fmt: skip
    assert "taken as ranks 0-1 in file order" in bf.notes[0]


def test_taskset_srun_prefixes_and_masks(tmp_path: Path) -> None:
    bf = read_binding(sample("taskset_cp_srun_l.txt"))
    assert [e.rank for e in bf.entries] == list(range(8))
    assert all(e.cpus == tuple(range(48)) for e in bf.entries)
    p = tmp_path / "t.txt"
    p.write_text(
        "pid 10's current affinity mask: ff\npid 11's current affinity list: 0-3\n"
        "pid 11's new affinity list: 8-11\n"
    )
    bf = read_binding(p)
    assert [(e.rank, e.cpus) for e in bf.entries] == [(0, tuple(range(8))), (1, (8, 9, 10, 11))]


def test_slurm_masks_hand_decoded() -> None:
    bf = read_binding(sample("slurm_cpu_bind_verbose.txt"))
    assert len(bf.entries) == 16
    e = bf.entries[9]  # "task  9  1 … mask 0xffff0000": bits 16-31
    assert (e.rank, e.local_rank, e.host, e.cpus) == (9, 1, "node02", tuple(range(16, 32)))


def test_openmpi4_picture_to_cpus() -> None:
    bf = read_binding(sample("openmpi4_report_bindings_map_by_socket.txt"))
    # 2 sockets × 24 cores × 2 threads: core k → CPUs k and k + 48; map-by socket alternates
    assert [e.cpus for e in bf.entries] == [(0, 48), (24, 72), (1, 49), (25, 73)]
    assert bf.entries[1].host == "node01"
    assert bf.entries[1].line == 3


def test_openmpi5_package_cores(tmp_path: Path) -> None:
    bf = read_binding(sample("openmpi5_report_bindings.txt"))
    assert bf.entries[3].cpus == tuple(range(36, 48))
    p = tmp_path / "o.txt"
    p.write_text(
        "[b5227] Rank 0 bound to package[0][core:L0]\n"
        "[n:1] Rank 1 is not bound (or bound to all available processors)\n"
    )
    a, b = read_binding(p).entries
    assert a.cpus == (0,)
    assert b.unbound
    p.write_text("[n:1] Rank 0 bound to package[0][hwt:0-1]\n")
    with pytest.raises(InputError, match=r"o.txt:1: package\[…\]\[hwt:…\]"):
        read_binding(p)


def test_launcher_configs(tmp_path: Path) -> None:
    bf = read_binding(sample("launcher_torchrun.yaml"))
    (e,) = bf.entries
    assert (e.rank, e.local_rank, e.follow_card, bf.nproc_per_node) == (None, None, "node", 8)
    bf = read_binding(sample("launcher_numactl_wrappers.yaml"))
    assert [e.local_rank for e in bf.entries] == list(range(8))
    assert (bf.entries[0].cpu_nodes, bf.entries[0].mem_nodes) == ((0,), (0,))
    assert bf.entries[6].cpus == tuple(range(96, 112))
    p = tmp_path / "l.yaml"
    p.write_text("launcher: torchrun\ncommand: torchrun --nproc_per_node 4 train.py\n")
    (e,) = read_binding(p).entries
    assert e.unbound
    p.write_text("launcher: x\nlocal_ranks:\n  - taskset -c 0-3 python t.py\n  - taskset 0xf0\n")
    assert [e.cpus for e in read_binding(p).entries] == [(0, 1, 2, 3), (4, 5, 6, 7)]


@pytest.mark.parametrize(
    ("text", "fmt", "match"),
    [
        ("rank,cpus\n0,0-3\n1,5-x\n", None, r"b.txt:3: cpus '5-x' cannot be read"),
        ("rank,host\n0,a\n", "cpus", r"b.txt:1: header .* has no cpus column"),
        ("cpu-bind=MASK - n1, task  0  0 [1]: mask 0xzz set\n", "slurm", r"no `cpu-bind="),
        ("[rank0]:physcpubind: 0 1\n[rank0]:physcpubind: 2\n", None, r"b.txt:2: rank 0 is given"),
        ("launcher: torchrun\nnuma_binding: socket\n", None, r"'socket' is not audited"),
        ("launcher: t\nlocal_ranks:\n  - python train.py\n", None, r"b.txt:3: .*binds no CPUs"),
        ("pid 1's current affinity mask: xyz\n", "taskset", r"b.txt:1: CPU mask"),
        ("- {rank: 0, cpu: 1, colour: red}\n", "cpus", r"b.txt:1: ranks\[0\].colour: unknown"),
    ],
)
def test_bad_binding_files_name_file_and_line(tmp_path: Path, text, fmt, match) -> None:
    p = tmp_path / "b.txt"
    p.write_text(text)
    with pytest.raises(InputError, match=match):
        read_binding(p, fmt)


def test_unknown_format_and_file(tmp_path: Path) -> None:
    p = tmp_path / "x.txt"
    p.write_text("hello\n")
    with pytest.raises(InputError, match="not a binding format"):
        read_binding(p)
    with pytest.raises(UsageError, match="--binding-format 'nope'"):
        read_binding(p, "nope")
    with pytest.raises(InputError, match="cannot read binding file"):
        read_binding(tmp_path / "missing.txt")


def test_hostile_inputs_are_refused_cleanly(tmp_path: Path) -> None:
    p = tmp_path / "bomb.yaml"
    rows = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    rows += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 7)]
    p.write_text("\n".join(rows) + "\nranks:\n  - {rank: 0, cpus: *a6}\n")
    with pytest.raises(InputError, match="expands to more than"):
        read_binding(p, "cpus")
    p = tmp_path / "big.csv"
    p.write_text("rank,cpus\n0,0-99999999\n")
    with pytest.raises(InputError, match=r"big.csv:2: cpus '0-99999999' cannot be read"):
        read_binding(p)
    p.write_bytes(b"rank,cpus\n\xff\xfe\n")
    with pytest.raises(InputError, match="not UTF-8"):
        read_binding(p)
    p.write_text("cpu-bind=MASK - n, task 0 0 [1]: mask 0x" + "f" * 20000 + " set\n")
    with pytest.raises(InputError, match=r"big\.csv:1: CPU mask"):
        read_binding(p)


@pytest.mark.parametrize(
    ("body", "match"),
    [  # break-it regressions: each was silently read as "not bound" (a wrong XP513)
        ("launcher: torchrun\nnuma_binding: 7\n", r"l.yaml:2: numa_binding: 7 .*accepted: node, "),
        ("launcher: torchrun\nlocal_ranks: 5\n", r"l.yaml:2: local_ranks: expected a non-empty"),
        ("launcher: [1, 2]\n", r"l.yaml:1: launcher: expected the launcher's name as text"),
        ("launcher: t\nnproc_per_node: -1\n", r"l.yaml:2: nproc_per_node: expected .* >= 1"),
    ],
)
def test_launcher_bad_values_are_refused(tmp_path: Path, body: str, match: str) -> None:
    p = tmp_path / "l.yaml"
    p.write_text(body)
    with pytest.raises(InputError, match=match) as exc:
        read_binding(p, "launcher")
    assert exc.value.exit_code == 2
    assert "\n" not in str(exc.value)


def test_launcher_valid_values_still_parse(tmp_path: Path) -> None:
    p = tmp_path / "l.yaml"
    p.write_text("launcher: torchrun\nnuma_binding: exclusive\nnproc_per_node: 4\n")
    bf = read_binding(p, "launcher")
    (e,) = bf.entries
    assert (e.follow_card, e.unbound, bf.nproc_per_node) == ("exclusive", False, 4)
