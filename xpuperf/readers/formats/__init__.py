"""Framework and vendor log formats: one small module per format, each with ``sniff`` and ``read``.

Every module defines ``NAME``, ``EXAMPLE``, ``sniff(first_lines) -> bool`` and
``read(src) -> TextTable`` (a :class:`~xpuperf.readers.base.RawTable` with canonical column names
whose units are part of the name, plus notes). Lines are streamed through
:func:`~xpuperf.readers.formats.console.iter_lines`, which removes launcher rank prefixes, ANSI
codes, tqdm bars and decodes UTF-8 or GB18030. :data:`FRAMEWORK_FORMATS` is the sniffing order:
formats whose step lines are most specific come first, MLPerf ``:::MLLOG`` (which wraps other
frameworks' output) last. The per-format documentation is ``docs/formats.md``.
"""

from __future__ import annotations

from types import ModuleType

from xpuperf.readers.base import Format
from xpuperf.readers.formats import (
    ascend,
    console,
    deepspeed,
    detectron2,
    hf,
    hf_state,
    keras,
    maskrcnn,
    megatron,
    mindspore,
    mllog,
    mmengine,
    paddle,
    tfcnn,
    torchtitan,
)

MODULES: tuple[ModuleType, ...] = (
    megatron, deepspeed, torchtitan, mmengine, detectron2, maskrcnn, paddle, hf, hf_state, keras,
    tfcnn, mindspore, ascend, mllog,
)  # fmt: skip
"""Format modules in sniffing order."""


_cleaned: tuple[int, list[str]] = (0, [])


def _clean_lines(lines: list[str]) -> list[str]:
    """The lines without launcher prefixes, ANSI codes and tqdm bars (cached for the last list)."""
    global _cleaned
    if _cleaned[0] != id(lines) or len(_cleaned[1]) != len(lines):
        _cleaned = (id(lines), [console.clean(x)[1] for x in lines])
    return _cleaned[1]


def _format(mod: ModuleType) -> Format:
    sniff = mod.sniff

    def cleaned_sniff(lines: list[str]) -> bool:
        try:
            return bool(sniff(_clean_lines(lines)))
        except Exception:  # a sniffer must never raise
            return False

    return Format(mod.NAME, getattr(mod, "EXTENSIONS", ()), cleaned_sniff, mod.read, mod.EXAMPLE)


FRAMEWORK_FORMATS: tuple[Format, ...] = tuple(_format(m) for m in MODULES)
"""The framework formats, in sniffing order (registered ahead of the generic ones)."""
