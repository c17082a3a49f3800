"""``NCCL WARN`` lines of an NCCL debug log → findings XP661–XP666.

NCCL prints every WARN whenever ``NCCL_DEBUG`` is ``WARN`` or ``INFO`` (NCCL ``src/debug.cc``:
``host:pid:tid [dev] file.cc:LINE NCCL WARN msg``). Each line is classified by its message
(:data:`KNOWN`, the wordings of NCCL 2.3–2.2x and RCCL); lines of one kind become one finding
with the count per distinct message, the first host and ``file:line``; the rest are summarised
in XP665. WARN lines that other checks read (simple-order / simple-ring fallback → XP657,
peer-to-peer failures → XP654, libibverbs → XP660) are classified ``None`` here and left to them.

======  =======  ==================================================================================
XP661   error    "Connect to … failed", "socketStartConnect: exceeded retries/timeouts",
                 "Connection closed by remote peer" (``src/misc/socket.cc``)
XP662   error    "NET/IB : Got completion … with error", "Call to ibv_… failed", "ibv_post_send()
                 failed", "Attempted to connect incompatible devices" (``src/transport/net_ib.cc``)
XP663   error    "Cuda failure 'X'" / "Cuda failure N 'X'" (``src/include/checks.h``)
XP664   error    "Error while creating|attaching to shared memory segment /dev/shm/…"
                 (``src/misc/shmutils.cc``)
XP666   error    "ring N does not loop back to start", "Could not find … NIC / gpu / path"
                 (``src/graph/rings.cc``, ``search.cc``, ``paths.cc``)
XP665   warning  every other WARN message, listed with its count
======  =======  ==================================================================================
"""

from __future__ import annotations

import re
from collections import Counter

from xpuperf.calibrate.nccllog_model import NcclLog, WarnLine
from xpuperf.findings import Finding, Severity

# (regex on the message, code); None: read by another check (see module docstring)
KNOWN: list[tuple[re.Pattern[str], str | None]] = [
    (re.compile(r"falling back to simple order|Could not create rings"), None),
    (re.compile(r"P2P is disabled between|failed to peer with device"), None),
    (re.compile(r"Failed to open libibverbs|NET/IB ?: Unable to open device"), None),
    (
        re.compile(
            r"[Cc]onnect(?:ion)? to \S+ (?:failed|returned)|exceeded (?:retries|timeouts|"
            r"error retry)|Connection closed by remote peer|Connection refused|"
            r"socketPollConnect|Call to connect"
        ),
        "XP661",
    ),
    (
        re.compile(
            r"NET/IB ?: ?Got completion|ibv_\w+\(?\)? (?:failed|returned)|Call to ibv_|"
            r"incompatible devices|NET/IB ?:.*(?:failed|error)"
        ),
        "XP662",
    ),
    (re.compile(r"Cuda failure"), "XP663"),
    (re.compile(r"shared memory segment|/dev/shm"), "XP664"),
    (
        re.compile(
            r"does not loop back to start|Could not find (?:NIC|gpu|intermediate GPU|any "
            r"local path|a path)|Internal error"
        ),
        "XP666",
    ),
]

_REMEDY = {
    "XP661": "a peer could not be reached or dropped the connection — check that "
    "NCCL_SOCKET_IFNAME names an interface routable between all nodes (not lo, docker0 or "
    "virbr0), that firewalls allow TCP between the nodes, and that every rank started; a WARN "
    "printed earlier by the peer is often the cause",
    "XP662": "the RDMA fabric reported an error — check the port state (`ibstat`, link up and "
    "Active), NCCL_IB_HCA (only the HCAs cabled to the fabric, one link type), on RoCE "
    "NCCL_IB_GID_INDEX (the RoCE v2 GID, `show_gids`), and raise NCCL_IB_TIMEOUT on a "
    "congested fabric ('transport retry counter exceeded' = error 12)",
    "XP663": "a CUDA call inside NCCL failed; the quoted CUDA error names the cause ('out of "
    "memory': free memory or lower NCCL_BUFFSIZE; 'peer access is not supported': see "
    "XP654) — check the GPU (`nvidia-smi`, Xid errors in `dmesg`) and that driver and CUDA "
    "runtime versions match",
    "XP664": "NCCL could not create its shared-memory segment in /dev/shm — give containers "
    "a larger /dev/shm (docker --shm-size=1g or --ipc=host; Kubernetes: an emptyDir of medium "
    "Memory on /dev/shm); NCCL_SHM_DISABLE=1 avoids it at a bandwidth cost",
    "XP665": "read them top to bottom — the first WARN is usually the cause of the later ones",
    "XP666": "NCCL's topology detection disagrees between ranks or found no path — run the "
    "same NCCL version on every rank, expose /sys (PCI topology) to containers, or give the "
    "topology with NCCL_TOPO_FILE",
}

_WHAT = {
    "XP661": "connection to a peer failed",
    "XP662": "InfiniBand / RDMA verbs error(s)",
    "XP663": "CUDA failure(s) inside NCCL",
    "XP664": "shared-memory segment error(s)",
    "XP665": "other NCCL WARN line(s)",
    "XP666": "NCCL topology / ring construction error(s)",
}

MAX_LISTED = 4


def clip(text: str, limit: int = 160) -> str:
    """``text`` whole when it fits in ``limit`` characters, else cut at the last space before
    the limit (a word never cut in two) with "…" appended."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip(" ,;:.") + "…"


def classify(text: str) -> str | None:
    """Finding code of a WARN message, ``None`` when another check reads it, ``"XP665"``
    (unknown) otherwise."""
    for rx, code in KNOWN:
        if rx.search(text):
            return code
    return "XP665"


def warn_counts(log: NcclLog) -> list[tuple[str, int]]:
    """Distinct WARN messages with their counts, most frequent first (ties: first seen)."""
    return Counter(w.text for w in log.warns).most_common()


def _at(w: WarnLine) -> str:
    where = f"{w.source.rsplit('/', 1)[-1]}:{w.line}" if w.source else f"line {w.line}"
    return f"{where}{f' on {w.host}' if w.host else ''}"


def warn_findings(log: NcclLog, where: str) -> list[Finding]:
    """One finding per WARN class present (XP661–XP666), messages listed with counts."""
    groups: dict[str, list[WarnLine]] = {}
    for w in log.warns:
        code = classify(w.text)
        if code is not None:
            groups.setdefault(code, []).append(w)
    out = []
    for code in sorted(groups):
        lines = groups[code]
        counts = Counter(w.text for w in lines).most_common()
        listed = "; ".join(f"'{clip(t)}' ×{n}" for t, n in counts[:MAX_LISTED])
        more = f" (+{len(counts) - MAX_LISTED} more distinct)" if len(counts) > MAX_LISTED else ""
        hosts = sorted({w.host for w in lines if w.host})
        sev = Severity.WARNING if code == "XP665" else Severity.ERROR
        out.append(
            Finding(
                code,
                sev,
                f"{where}: {len(lines)} NCCL WARN line(s), {_WHAT[code]}: {listed}{more}; "
                f"first at {_at(lines[0])}"
                f"{f', on {len(hosts)} host(s)' if len(hosts) > 1 else ''}; threshold 0 — "
                f"{_REMEDY[code]}",
                {
                    "where": where,
                    "warn_lines": len(lines),
                    "messages": [{"text": t, "count": n} for t, n in counts],
                    "first_line": lines[0].line,
                    "hosts": hosts,
                },
            )
        )
    return out
