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
"""Bytes per gradient element by dtype (IEEE 754 binary32 / binary16; bfloat16 = 16 bits)."""

Tensors = list[tuple[str, int]]


@dataclass(frozen=True)
class Workload:
    """A model's trainable parameter tensors.

    Attributes:
        name: preset name (or ``"params"`` for an even split).
        tensors: (name, element count) per parameter tensor, forward/registration order.
        note: what is counted (e.g. "without aux head").
        macs: forward multiply-accumulates per sample owned by each tensor (same order as
            ``tensors``; weights of conv / linear layers, 0 elsewhere), or None.

    Raises:
        CostModelError: ``macs`` is not one value per tensor.
    """

    name: str
    tensors: tuple[tuple[str, int], ...]
    note: str = ""
    macs: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.macs is not None and len(self.macs) != len(self.tensors):
            raise CostModelError("give one MAC count per parameter tensor")

    @property
    def n_params(self) -> int:
        """Total trainable parameters (elements)."""
        return sum(n for _, n in self.tensors)

    def grad_bytes(self, dtype: str = "fp32") -> int:
        """Total gradient bytes W = parameters × bytes per element (formulas.md §4) for
        ``dtype``; raises :class:`CostModelError` if unknown."""
        return self.n_params * dtype_bytes(dtype)

    def backward_sizes_B(self, dtype: str = "fp32") -> list[int]:
        """Gradient bytes per tensor in the order backward produces them (reverse of forward).

        Raises :class:`CostModelError` for an unknown ``dtype``.
        """
        b = dtype_bytes(dtype)
        return [n * b for _, n in reversed(self.tensors)]

    @property
    def forward_macs(self) -> float | None:
        """Forward multiply-accumulates per sample of the layers that own parameters (conv and
        linear), or None when the preset has no per-layer compute.

        Conv: C_out · C_in · k_h · k_w · H_out · W_out; linear: F_in · F_out (the standard
        dense-layer count; pooling, activations and normalisation left out).
        """
        return None if self.macs is None else float(sum(self.macs))

    def backward_compute_s(self, t_backward_s: float) -> list[float] | None:
        """Backward compute time per tensor, in backward order, seconds; None without MACs.

        Backward of a conv / linear layer = the input gradient (dgrad) + the weight gradient
        (wgrad), each as many MACs as the forward pass; the first layer needs no dgrad (the
        input has no gradient). ``t_backward_s`` is split over the layers in proportion to
        these MACs and charged to the layer's weight tensor, so each gradient is ready when its
        layer's backward is done; bias and batch-norm gradients (no MACs) are ready with the
        layer after them in backward order. Pooling, activations and normalisation are not
        counted (an assumption: conv and linear MACs dominate CNN compute).

        Returns one value per tensor, seconds; ``t_backward_s`` is not checked (no raise).
        Source: backward ≈ 2 × forward compute (dgrad + wgrad), as in Kaplan et al. 2020
        ("Scaling Laws for Neural Language Models", §2.1: 2N forward, 4N backward FLOPs/token).
        """
        if self.macs is None:
            return None
        first = next((i for i, m in enumerate(self.macs) if m > 0), None)
        work = [m if i == first else 2.0 * m for i, m in enumerate(self.macs)]
        total = sum(work)
        if total <= 0:
            return None
        return [t_backward_s * x / total for x in reversed(work)]


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of ``dtype`` (fp32 4, fp16 2, bf16 2); raises :class:`CostModelError`."""
    try:
        return DTYPE_BYTES[dtype.lower()]
    except KeyError:
        raise CostModelError(
            f"unknown gradient dtype {dtype!r}; use one of {', '.join(DTYPE_BYTES)}"
        ) from None


# ------------------------------------------------------------------------------ building blocks


class _Net(list):
    """Parameter tensors (name, elements) in registration order, plus ``macs``: forward
    multiply-accumulates per sample keyed by tensor name (weights of conv / linear layers)."""

    def __init__(self, items=()) -> None:
        super().__init__(items)
        self.macs: dict[str, float] = {}


def _conv(t: Tensors, name: str, cin: int, cout: int, kh: int, kw: int | None = None,
          bias: bool = True, hw: int | None = None) -> None:  # fmt: skip
    """Conv weight (+ bias); ``hw`` = output height = width: MACs = cout·cin·kh·kw·hw²."""
    n = cout * cin * kh * (kh if kw is None else kw)
    t.append((f"{name}.weight", n))
    if hw is not None and isinstance(t, _Net):
        t.macs[f"{name}.weight"] = float(n * hw * hw)
    if bias:
        t.append((f"{name}.bias", cout))


def _bn(t: Tensors, name: str, c: int) -> None:
    t.extend([(f"{name}.weight", c), (f"{name}.bias", c)])


def _linear(t: Tensors, name: str, fin: int, fout: int, bias: bool = True) -> None:
    t.append((f"{name}.weight", fin * fout))
    if isinstance(t, _Net):
        t.macs[f"{name}.weight"] = float(fin * fout)  # per sample (CNN heads); MACs = params
    if bias:
        t.append((f"{name}.bias", fout))


def _basic(t: Tensors, name: str, cin: int, cout: int, kh: int, kw: int | None = None,
           hw: int | None = None) -> None:  # fmt: skip
    """Conv without bias + batch norm (torchvision ``BasicConv2d``, conv + BN in ResNet);
    ``hw`` = the conv's output size (for MACs)."""
    _conv(t, f"{name}.conv", cin, cout, kh, kw, bias=False, hw=hw)
    _bn(t, f"{name}.bn", cout)


# ------------------------------------------------------------------------------------- models


def _resnet(blocks: tuple[int, int, int, int]) -> Tensors:
    """torchvision ResNet (v1.5: stride 2 on the 3×3 conv), 224×224 input: stem 112, then
    stages at 56, 28, 14, 7."""
    t = _Net()
    _basic(t, "stem", 3, 64, 7, hw=112)
    cin, res_in = 64, 56
    for stage, (n_blocks, width, res) in enumerate(
        zip(blocks, (64, 128, 256, 512), (56, 28, 14, 7), strict=True)
    ):
        for b in range(n_blocks):
            p = f"layer{stage + 1}.{b}"
            _basic(t, f"{p}.1", cin, width, 1, hw=res_in if b == 0 else res)
            _basic(t, f"{p}.2", width, width, 3, hw=res)
            _basic(t, f"{p}.3", width, 4 * width, 1, hw=res)
            if b == 0:
                _basic(t, f"{p}.downsample", cin, 4 * width, 1, hw=res)
            cin = 4 * width
        res_in = res
    _linear(t, "fc", 2048, 1000)
    return t


def _vgg16() -> Tensors:
    """VGG-16 (config D), 224×224 input: 2 convs at 224, 2 at 112, 3 at 56, 3 at 28, 3 at 14."""
    t = _Net()
    cin = 3
    for i, (c, hw) in enumerate(zip((64, 64, 128, 128, 256, 256, 256, 512, 512, 512, 512, 512, 512),
                                    (224, 224, 112, 112, 56, 56, 56, 28, 28, 28, 14, 14, 14),
                                    strict=True)):  # fmt: skip
        _conv(t, f"features.{i}", cin, c, 3, hw=hw)
        cin = c
    _linear(t, "classifier.0", 512 * 7 * 7, 4096)
    _linear(t, "classifier.3", 4096, 4096)
    _linear(t, "classifier.6", 4096, 1000)
    return t


def _alexnet() -> Tensors:
    """torchvision AlexNet, 224×224 input: conv1 11×11/4 → 55, pool → 27, conv2 → 27, pool →
    13, conv3–5 at 13, pool → 6 (9216 features)."""
    t = _Net()
    for i, (cin, cout, k, hw) in enumerate(((3, 64, 11, 55), (64, 192, 5, 27), (192, 384, 3, 13),
                                            (384, 256, 3, 13), (256, 256, 3, 13))):  # fmt: skip
        _conv(t, f"features.{i}", cin, cout, k, hw=hw)
    _linear(t, "classifier.1", 256 * 6 * 6, 4096)
    _linear(t, "classifier.4", 4096, 4096)
    _linear(t, "classifier.6", 4096, 1000)
    return t


def _inception_v3(aux: bool) -> Tensors:
    """torchvision Inception-v3, 299×299 input: stem 149, 147, 147, (pool) 73, 71, (pool) 35;
    Mixed_5* at 35, Mixed_6a → 17, Mixed_6* at 17, Mixed_7a → 8, Mixed_7* at 8; the aux head
    pools 17 → 5, then a 5×5 conv → 1."""
    t = _Net()

    def b(t: Tensors, name: str, cin: int, cout: int, kh: int, kw: int | None = None,
          hw: int = 0) -> None:  # fmt: skip
        _basic(t, name, cin, cout, kh, kw, hw=hw)

    for name, cin, cout, k, hw in (("Conv2d_1a", 3, 32, 3, 149), ("Conv2d_2a", 32, 32, 3, 147),
                                   ("Conv2d_2b", 32, 64, 3, 147), ("Conv2d_3b", 64, 80, 1, 73),
                                   ("Conv2d_4a", 80, 192, 3, 71)):  # fmt: skip
        b(t, name, cin, cout, k, hw=hw)
    for name, cin, pool in (("Mixed_5b", 192, 32), ("Mixed_5c", 256, 64), ("Mixed_5d", 288, 64)):
        b(t, f"{name}.b1x1", cin, 64, 1, hw=35)
        b(t, f"{name}.b5x5_1", cin, 48, 1, hw=35)
        b(t, f"{name}.b5x5_2", 48, 64, 5, hw=35)
        b(t, f"{name}.b3x3dbl_1", cin, 64, 1, hw=35)
        b(t, f"{name}.b3x3dbl_2", 64, 96, 3, hw=35)
        b(t, f"{name}.b3x3dbl_3", 96, 96, 3, hw=35)
        b(t, f"{name}.pool", cin, pool, 1, hw=35)
    b(t, "Mixed_6a.b3x3", 288, 384, 3, hw=17)
    b(t, "Mixed_6a.b3x3dbl_1", 288, 64, 1, hw=35)
    b(t, "Mixed_6a.b3x3dbl_2", 64, 96, 3, hw=35)
    b(t, "Mixed_6a.b3x3dbl_3", 96, 96, 3, hw=17)
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        b(t, f"{name}.b1x1", 768, 192, 1, hw=17)
        b(t, f"{name}.b7x7_1", 768, c7, 1, hw=17)
        b(t, f"{name}.b7x7_2", c7, c7, 1, 7, hw=17)
        b(t, f"{name}.b7x7_3", c7, 192, 7, 1, hw=17)
        b(t, f"{name}.b7x7dbl_1", 768, c7, 1, hw=17)
        for i, (kh, kw) in enumerate(((7, 1), (1, 7), (7, 1)), start=2):
            b(t, f"{name}.b7x7dbl_{i}", c7, c7, kh, kw, hw=17)
        b(t, f"{name}.b7x7dbl_5", c7, 192, 1, 7, hw=17)
        b(t, f"{name}.pool", 768, 192, 1, hw=17)
    if aux:
        b(t, "AuxLogits.conv0", 768, 128, 1, hw=5)
        b(t, "AuxLogits.conv1", 128, 768, 5, hw=1)
        _linear(t, "AuxLogits.fc", 768, 1000)
    b(t, "Mixed_7a.b3x3_1", 768, 192, 1, hw=17)
    b(t, "Mixed_7a.b3x3_2", 192, 320, 3, hw=8)
    b(t, "Mixed_7a.b7x7x3_1", 768, 192, 1, hw=17)
    b(t, "Mixed_7a.b7x7x3_2", 192, 192, 1, 7, hw=17)
    b(t, "Mixed_7a.b7x7x3_3", 192, 192, 7, 1, hw=17)
    b(t, "Mixed_7a.b7x7x3_4", 192, 192, 3, hw=8)
    for name, cin in (("Mixed_7b", 1280), ("Mixed_7c", 2048)):
        b(t, f"{name}.b1x1", cin, 320, 1, hw=8)
        b(t, f"{name}.b3x3_1", cin, 384, 1, hw=8)
        b(t, f"{name}.b3x3_2a", 384, 384, 1, 3, hw=8)
        b(t, f"{name}.b3x3_2b", 384, 384, 3, 1, hw=8)
        b(t, f"{name}.b3x3dbl_1", cin, 448, 1, hw=8)
        b(t, f"{name}.b3x3dbl_2", 448, 384, 3, hw=8)
        b(t, f"{name}.b3x3dbl_3a", 384, 384, 1, 3, hw=8)
        b(t, f"{name}.b3x3dbl_3b", 384, 384, 3, 1, hw=8)
        b(t, f"{name}.pool", cin, 192, 1, hw=8)
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
            t = build()
            macs = getattr(t, "macs", None)
            per = tuple(macs.get(n, 0.0) for n, _ in t) if macs else None
            return Workload(preset_name, tuple(t), note, per)
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
