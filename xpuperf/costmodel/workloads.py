"""Model presets: parameter tensors built layer by layer from the architectures.

Each preset lists its trainable parameter tensors in registration (forward) order, as
``model.parameters()`` would; gradients become ready in the reverse order during backward, which
is the order PyTorch DDP fills its buckets in (:meth:`Workload.backward_sizes_B`). Batch-norm
running statistics are buffers, not parameters, and are not counted; convolutions followed by
batch norm have no bias (torchvision).

Published counts reproduced exactly (tests/costmodel/test_workloads.py):

======================  ==============  =================================================
preset                  parameters      source of the architecture / count
======================  ==============  =================================================
resnet50 / 101 / 152    25,557,032 /    He et al. 2016; torchvision ``resnet*`` (weights
                        44,549,160 /    metadata ``num_params``)
                        60,192,808
vgg16                   138,357,544     Simonyan & Zisserman 2015, config D; torchvision
alexnet                 61,100,840      torchvision variant (64/192/384/256/256 channels)
inception_v3            23,834,568      Szegedy et al. 2016; torchvision without the aux
                                        head (27,161,264 with ``aux_logits=True``: preset
                                        ``inception_v3_aux``)
bert_large              335,141,888     Devlin et al. 2019 (L=24, H=1024, A=16, vocab
                                        30522); Hugging Face ``BertModel`` incl. the
                                        pooler (334,092,288 without it)
gpt2 / -medium / -large 124,439,808 /   Radford et al. 2019; Hugging Face ``GPT2Model``
/ -xl                   354,823,168 /   (vocab 50257, 1024 positions, LM head tied to the
                        774,030,080 /   token embedding)
                        1,557,611,200
======================  ==============  =================================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xpuperf.costmodel.checks import CostModelError, positive_int

DTYPE_BYTES: dict[str, int] = {"fp32": 4, "fp16": 2, "bf16": 2}
"""Bytes per gradient element by dtype."""

Tensors = list[tuple[str, int]]


@dataclass(frozen=True)
class Workload:
    """A model's trainable parameter tensors.

    Attributes:
        name: preset name (or ``"params"`` for an even split).
        tensors: (name, element count) per parameter tensor, forward/registration order.
        note: what is counted (e.g. "without aux head").
    """

    name: str
    tensors: tuple[tuple[str, int], ...]
    note: str = ""

    @property
    def n_params(self) -> int:
        """Total trainable parameters (elements)."""
        return sum(n for _, n in self.tensors)

    def grad_bytes(self, dtype: str = "fp32") -> int:
        """Total gradient bytes W for ``dtype``; raises :class:`CostModelError` if unknown."""
        return self.n_params * dtype_bytes(dtype)

    def backward_sizes_B(self, dtype: str = "fp32") -> list[int]:
        """Gradient bytes per tensor in the order backward produces them (reverse of forward)."""
        b = dtype_bytes(dtype)
        return [n * b for _, n in reversed(self.tensors)]


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of ``dtype`` (fp32 4, fp16 2, bf16 2); raises :class:`CostModelError`."""
    try:
        return DTYPE_BYTES[dtype.lower()]
    except KeyError:
        raise CostModelError(
            f"unknown gradient dtype {dtype!r}; use one of {', '.join(DTYPE_BYTES)}"
        ) from None


# ------------------------------------------------------------------------------ building blocks


def _conv(t: Tensors, name: str, cin: int, cout: int, kh: int, kw: int | None = None,
          bias: bool = True) -> None:  # fmt: skip
    t.append((f"{name}.weight", cout * cin * kh * (kh if kw is None else kw)))
    if bias:
        t.append((f"{name}.bias", cout))


def _bn(t: Tensors, name: str, c: int) -> None:
    t.extend([(f"{name}.weight", c), (f"{name}.bias", c)])


def _linear(t: Tensors, name: str, fin: int, fout: int, bias: bool = True) -> None:
    t.append((f"{name}.weight", fin * fout))
    if bias:
        t.append((f"{name}.bias", fout))


def _basic(t: Tensors, name: str, cin: int, cout: int, kh: int, kw: int | None = None) -> None:
    """Conv without bias + batch norm (torchvision ``BasicConv2d``, conv + BN in ResNet)."""
    _conv(t, f"{name}.conv", cin, cout, kh, kw, bias=False)
    _bn(t, f"{name}.bn", cout)


# ------------------------------------------------------------------------------------- models


def _resnet(blocks: tuple[int, int, int, int]) -> Tensors:
    t: Tensors = []
    _basic(t, "stem", 3, 64, 7)
    cin = 64
    for stage, (n_blocks, width) in enumerate(zip(blocks, (64, 128, 256, 512), strict=True)):
        for b in range(n_blocks):
            p = f"layer{stage + 1}.{b}"
            _basic(t, f"{p}.1", cin, width, 1)
            _basic(t, f"{p}.2", width, width, 3)
            _basic(t, f"{p}.3", width, 4 * width, 1)
            if b == 0:
                _basic(t, f"{p}.downsample", cin, 4 * width, 1)
            cin = 4 * width
    _linear(t, "fc", 2048, 1000)
    return t


def _vgg16() -> Tensors:
    t: Tensors = []
    cin = 3
    for i, c in enumerate((64, 64, 128, 128, 256, 256, 256, 512, 512, 512, 512, 512, 512)):
        _conv(t, f"features.{i}", cin, c, 3)
        cin = c
    _linear(t, "classifier.0", 512 * 7 * 7, 4096)
    _linear(t, "classifier.3", 4096, 4096)
    _linear(t, "classifier.6", 4096, 1000)
    return t


def _alexnet() -> Tensors:
    t: Tensors = []
    for i, (cin, cout, k) in enumerate(((3, 64, 11), (64, 192, 5), (192, 384, 3), (384, 256, 3),
                                        (256, 256, 3))):  # fmt: skip
        _conv(t, f"features.{i}", cin, cout, k)
    _linear(t, "classifier.1", 256 * 6 * 6, 4096)
    _linear(t, "classifier.4", 4096, 4096)
    _linear(t, "classifier.6", 4096, 1000)
    return t


def _inception_v3(aux: bool) -> Tensors:
    t: Tensors = []
    b = _basic
    for name, cin, cout, k in (("Conv2d_1a", 3, 32, 3), ("Conv2d_2a", 32, 32, 3),
                               ("Conv2d_2b", 32, 64, 3), ("Conv2d_3b", 64, 80, 1),
                               ("Conv2d_4a", 80, 192, 3)):  # fmt: skip
        b(t, name, cin, cout, k)
    for name, cin, pool in (("Mixed_5b", 192, 32), ("Mixed_5c", 256, 64), ("Mixed_5d", 288, 64)):
        b(t, f"{name}.b1x1", cin, 64, 1)
        b(t, f"{name}.b5x5_1", cin, 48, 1)
        b(t, f"{name}.b5x5_2", 48, 64, 5)
        b(t, f"{name}.b3x3dbl_1", cin, 64, 1)
        b(t, f"{name}.b3x3dbl_2", 64, 96, 3)
        b(t, f"{name}.b3x3dbl_3", 96, 96, 3)
        b(t, f"{name}.pool", cin, pool, 1)
    b(t, "Mixed_6a.b3x3", 288, 384, 3)
    b(t, "Mixed_6a.b3x3dbl_1", 288, 64, 1)
    b(t, "Mixed_6a.b3x3dbl_2", 64, 96, 3)
    b(t, "Mixed_6a.b3x3dbl_3", 96, 96, 3)
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        b(t, f"{name}.b1x1", 768, 192, 1)
        b(t, f"{name}.b7x7_1", 768, c7, 1)
        b(t, f"{name}.b7x7_2", c7, c7, 1, 7)
        b(t, f"{name}.b7x7_3", c7, 192, 7, 1)
        b(t, f"{name}.b7x7dbl_1", 768, c7, 1)
        for i, (kh, kw) in enumerate(((7, 1), (1, 7), (7, 1)), start=2):
            b(t, f"{name}.b7x7dbl_{i}", c7, c7, kh, kw)
        b(t, f"{name}.b7x7dbl_5", c7, 192, 1, 7)
        b(t, f"{name}.pool", 768, 192, 1)
    if aux:
        b(t, "AuxLogits.conv0", 768, 128, 1)
        b(t, "AuxLogits.conv1", 128, 768, 5)
        _linear(t, "AuxLogits.fc", 768, 1000)
    b(t, "Mixed_7a.b3x3_1", 768, 192, 1)
    b(t, "Mixed_7a.b3x3_2", 192, 320, 3)
    b(t, "Mixed_7a.b7x7x3_1", 768, 192, 1)
    b(t, "Mixed_7a.b7x7x3_2", 192, 192, 1, 7)
    b(t, "Mixed_7a.b7x7x3_3", 192, 192, 7, 1)
    b(t, "Mixed_7a.b7x7x3_4", 192, 192, 3)
    for name, cin in (("Mixed_7b", 1280), ("Mixed_7c", 2048)):
        b(t, f"{name}.b1x1", cin, 320, 1)
        b(t, f"{name}.b3x3_1", cin, 384, 1)
        b(t, f"{name}.b3x3_2a", 384, 384, 1, 3)
        b(t, f"{name}.b3x3_2b", 384, 384, 3, 1)
        b(t, f"{name}.b3x3dbl_1", cin, 448, 1)
        b(t, f"{name}.b3x3dbl_2", 448, 384, 3)
        b(t, f"{name}.b3x3dbl_3a", 384, 384, 1, 3)
        b(t, f"{name}.b3x3dbl_3b", 384, 384, 3, 1)
        b(t, f"{name}.pool", cin, 192, 1)
    _linear(t, "fc", 2048, 1000)
    return t


def _layernorm(t: Tensors, name: str, d: int) -> None:
    t.extend([(f"{name}.weight", d), (f"{name}.bias", d)])


def _bert_large(pooler: bool = True) -> Tensors:
    h, ff, layers = 1024, 4096, 24
    t: Tensors = [("embeddings.word", 30522 * h), ("embeddings.position", 512 * h),
                  ("embeddings.token_type", 2 * h)]  # fmt: skip
    _layernorm(t, "embeddings.LayerNorm", h)
    for i in range(layers):
        p = f"encoder.layer.{i}"
        for proj in ("query", "key", "value"):
            _linear(t, f"{p}.attention.self.{proj}", h, h)
        _linear(t, f"{p}.attention.output.dense", h, h)
        _layernorm(t, f"{p}.attention.output.LayerNorm", h)
        _linear(t, f"{p}.intermediate.dense", h, ff)
        _linear(t, f"{p}.output.dense", ff, h)
        _layernorm(t, f"{p}.output.LayerNorm", h)
    if pooler:
        _linear(t, "pooler.dense", h, h)
    return t


def _gpt2(layers: int, d: int) -> Tensors:
    t: Tensors = [("wte", 50257 * d), ("wpe", 1024 * d)]
    for i in range(layers):
        p = f"h.{i}"
        _layernorm(t, f"{p}.ln_1", d)
        _linear(t, f"{p}.attn.c_attn", d, 3 * d)
        _linear(t, f"{p}.attn.c_proj", d, d)
        _layernorm(t, f"{p}.ln_2", d)
        _linear(t, f"{p}.mlp.c_fc", d, 4 * d)
        _linear(t, f"{p}.mlp.c_proj", 4 * d, d)
    _layernorm(t, "ln_f", d)
    return t


_PRESETS: dict[str, tuple[Callable[[], Tensors], str]] = {
    "resnet50": (lambda: _resnet((3, 4, 6, 3)), ""),
    "resnet101": (lambda: _resnet((3, 4, 23, 3)), ""),
    "resnet152": (lambda: _resnet((3, 8, 36, 3)), ""),
    "vgg16": (_vgg16, ""),
    "alexnet": (_alexnet, "torchvision variant"),
    "inception_v3": (lambda: _inception_v3(aux=False), "without the auxiliary head"),
    "inception_v3_aux": (lambda: _inception_v3(aux=True), "with the auxiliary head"),
    "bert_large": (_bert_large, "with the pooler"),
    "bert_large_nopooler": (lambda: _bert_large(pooler=False), "without the pooler"),
    "gpt2": (lambda: _gpt2(12, 768), "LM head tied to wte"),
    "gpt2-medium": (lambda: _gpt2(24, 1024), "LM head tied to wte"),
    "gpt2-large": (lambda: _gpt2(36, 1280), "LM head tied to wte"),
    "gpt2-xl": (lambda: _gpt2(48, 1600), "LM head tied to wte"),
}
MODEL_PRESETS: tuple[str, ...] = tuple(_PRESETS)
"""Names accepted by :func:`model` (case-insensitive; ``-`` and ``_`` interchangeable)."""


def model(name: str) -> Workload:
    """The preset ``name`` (see :data:`MODEL_PRESETS`); raises :class:`CostModelError`."""
    key = name.lower().replace("_", "-")
    for preset_name, (build, note) in _PRESETS.items():
        if preset_name.replace("_", "-") == key:
            return Workload(preset_name, tuple(build()), note)
    raise CostModelError(
        f"unknown model {name!r}; use one of {', '.join(MODEL_PRESETS)} or --params"
    )


def even_split(n_params: int, n_tensors: int = 100) -> Workload:
    """``--params N``: N parameters split evenly over ``n_tensors`` tensors (remainder on the
    first ones). Raises :class:`CostModelError` for N < 1 or n_tensors < 1."""
    n = positive_int("params", n_params)
    k = min(positive_int("n_tensors", n_tensors), n)
    q, r = divmod(n, k)
    return Workload("params", tuple((f"t{i}", q + (i < r)) for i in range(k)), f"{k} equal tensors")
