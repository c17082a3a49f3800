"""Importer for the Ascend HCCL rank table (``RANK_TABLE_FILE``; formats v1.0 and v1.2 with
``server_list``, and the older ``group_list`` layout).

Input shape (numbers may be strings, as Ascend tools write them)::

    {"version": "1.0", "server_count": "2", "status": "completed",
     "server_list": [{"server_id": "10.0.0.1",
                      "device": [{"device_id": "0", "device_ip": "10.0.0.2", "rank_id": "0"}, …]},
                     …]}
    {"status": "completed", "group_list": [{"instance_list": [{"server_id": …,
                      "devices": [{"device_id": "0", "device_ip": …}]}]}]}     # ranks by order

Extracted: one node per server (named by ``server_id``), one device per ``device_id``, one NIC
per device named by its ``device_ip`` (each Ascend NPU has its own RoCE port; speed unknown), and
the explicit rank placement from ``rank_id`` (or list order when there is none). ``server_count``
and ``status`` are checked (a status other than ``completed`` is reported as a note).

Errors: :class:`~xpuperf.errors.InputError` for invalid JSON (with line), missing servers or
devices, numbers that are not integers, duplicate device or rank ids, or rank ids that are not
0 … N−1.
"""

from __future__ import annotations

import json
import re
from typing import Any

from xpuperf.errors import InputError
from xpuperf.surrogates import clean_parsed
from xpuperf.topology.importers.base import HostFacts, Imported, NicFacts

NAME = "hccl-ranktable"


def sniff(text: str) -> bool:
    """True for an HCCL rank table: JSON with ``server_list`` or ``group_list`` and device ids."""
    return text.lstrip().startswith("{") and bool(
        re.search(r'"(server_list|group_list)"', text) and '"device_id"' in text
    )


def _num(v: Any, what: str, path: str) -> int:
    if isinstance(v, bool):
        raise InputError(f"{what}: expected an integer, got {v!r}", path)
    if isinstance(v, int):
        return v
    if isinstance(v, str) and re.fullmatch(r"[0-9]{1,18}", v.strip()):
        return int(v)
    raise InputError(f"{what}: expected an integer (or a string of digits), got {v!r}", path)


def parse(text: str, source: str = "<text>") -> Imported:
    """Read a rank table into named hosts and a rank placement (see the module docstring).

    Raises:
        InputError: see the module docstring.
    """
    try:
        data = clean_parsed(json.loads(text), text)
    except json.JSONDecodeError as e:
        raise InputError(f"not valid JSON: {e.msg}", source, e.lineno) from None
    except RecursionError:
        raise InputError("JSON nested too deeply to be a rank table", source) from None
    if not isinstance(data, dict):
        raise InputError("a rank table is a JSON object", source)
    if "server_list" in data:
        servers = data["server_list"]
        dev_key = "device"
    elif isinstance(data.get("group_list"), list):
        servers = [i for g in data["group_list"] for i in g.get("instance_list", [])]
        dev_key = "devices"
    else:
        raise InputError("no server_list (or group_list) in the rank table", source)
    if not isinstance(servers, list) or not servers:
        raise InputError("server_list is empty; expected one entry per server", source)
    imp = Imported(formats=[NAME])
    status = data.get("status")
    if status is not None and status != "completed":
        imp.notes.append(f"{source}: rank table status is {status!r}, not 'completed'")
    ranks: dict[int, tuple[int, int]] = {}
    order: list[tuple[int, int]] = []
    for s, server in enumerate(servers):
        where = f"server_list[{s}]"
        if not isinstance(server, dict) or not isinstance(server.get(dev_key), list):
            raise InputError(f"{where}: expected a server with a {dev_key!r} list", source)
        name = str(server.get("server_id") or server.get("pod_name") or f"server{s}")
        if any(h.name == name for h in imp.hosts):
            raise InputError(f"{where}: server_id {name} listed twice", source)
        host = HostFacts(name=name, sources=[source])
        for j, dev in enumerate(server[dev_key]):
            w = f"{where}.{dev_key}[{j}]"
            if not isinstance(dev, dict) or "device_id" not in dev:
                raise InputError(f"{w}: expected an object with device_id", source)
            d = _num(dev["device_id"], f"{w}.device_id", source)
            if d in host.devices:
                raise InputError(f"{w}: device_id {d} listed twice on server {name}", source)
            nic = str(dev.get("device_ip") or f"npu{d}")
            host.device(d).nic = nic
            host.nics[nic] = NicFacts(nic)
            order.append((s, d))
            if "rank_id" in dev:
                r = _num(dev["rank_id"], f"{w}.rank_id", source)
                if r in ranks:
                    raise InputError(f"{w}: rank_id {r} is already used", source)
                ranks[r] = (s, d)
        if not host.devices:
            raise InputError(f"{where}: server {name} has no devices", source)
        imp.hosts.append(host)
    declared = data.get("server_count")
    if declared is not None and _num(declared, "server_count", source) != len(imp.hosts):
        raise InputError(
            f"server_count is {declared} but {len(imp.hosts)} servers are listed", source
        )
    if ranks:
        if sorted(ranks) != list(range(len(order))):
            raise InputError(f"rank_id values must be 0…{len(order) - 1}, one per device", source)
        imp.placement = [ranks[r] for r in range(len(order))]
    else:
        imp.placement = order
    return imp
