"""Framework and vendor log formats: one small module per format, each with ``sniff`` and ``read``.

Every module defines ``NAME``, ``EXAMPLE``, ``sniff(first_lines) -> bool`` and
``read(src) -> TextTable`` (a :class:`~xpuperf.readers.base.RawTable` with canonical column names
whose units are part of the name, plus notes). Lines are streamed through
:func:`~xpuperf.readers.formats.console.iter_lines`, which removes launcher rank prefixes, ANSI
codes, tqdm bars and decodes UTF-8 or GB18030. :data:`FRAMEWORK_FORMATS` is the sniffing order:
formats whose step lines are most specific come first, MLPerf ``:::MLLOG`` (which wraps other
frameworks' output) and tqdm progress bars (the timing of last resort) last. The per-format
documentation is ``docs/formats.md``.
"""

from __future__ import annotations

from types import ModuleType

from xpuperf.readers.base import Format
from xpuperf.readers.formats import (
    ascend,
    console,
    deepspeed,
    detectron2,
    fairseq,
    hf,
    hf_state,
    keras,
    maskrcnn,
    megatron,
    mindspore,
    mllog,
    mmengine,
    nanogpt,
    paddle,
    tfcnn,
    timm,
    torchtitan,
    tqdm,
)

MODULES: tuple[ModuleType, ...] = (
    megatron, deepspeed, torchtitan, mmengine, detectron2, maskrcnn, paddle, fairseq, hf, hf_state,
    keras, tfcnn, mindspore, ascend, timm, nanogpt, mllog, tqdm,
)  # fmt: skip
"""Format modules in sniffing order."""


_cleaned: tuple[list[str] | None, list[str]] = (None, [])


def _clean_lines(lines: list[str]) -> list[str]:
    """The lines without launcher prefixes, ANSI codes and tqdm bars (cached for the last list).

    The cache holds the list itself, not its ``id``: a short-lived list's id is reused by the
    next one, which then got the previous list's lines (a sniff of ``['hello']`` made the next
    sniff of a Megatron line fail). Read once into a local: safe when threads sniff at once."""
    global _cleaned
    key, cleaned = _cleaned
    if key is not lines or len(cleaned) != len(lines):
        cleaned = [console.clean(x)[1] for x in lines]
        _cleaned = (lines, cleaned)
    return cleaned


def _format(mod: ModuleType) -> Format:
    sniff = mod.sniff
    raw = getattr(mod, "SNIFF_RAW", False)  # tqdm: its lines are the bars cleaning removes

    def cleaned_sniff(lines: list[str]) -> bool:
        try:
            return bool(sniff(lines if raw else _clean_lines(lines)))
        except Exception:  # a sniffer must never raise
            return False

    return Format(mod.NAME, getattr(mod, "EXTENSIONS", ()), cleaned_sniff, mod.read, mod.EXAMPLE)


FRAMEWORK_FORMATS: tuple[Format, ...] = tuple(_format(m) for m in MODULES)
"""The framework formats, in sniffing order (registered ahead of the generic ones)."""
