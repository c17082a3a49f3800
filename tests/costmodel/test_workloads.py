"""Model presets: parameter counts built layer by layer must equal the published ones.

Published counts: torchvision model weights metadata ``num_params`` (ResNet-50 25,557,032;
ResNet-101 44,549,160; ResNet-152 60,192,808; VGG-16 138,357,544; AlexNet 61,100,840;
Inception-v3 27,161,264 with the aux head); Hugging Face model cards (bert-large 335,141,888 for
BertModel incl. pooler; GPT-2 124,439,808 / 354,823,168 / 774,030,080 / 1,557,611,200).
formulas.md §7 rounds them: 25.6 M, 44.5 M, 60.2 M, 138 M, 23.8 M (27.2 M with aux), 61 M, 340 M.
"""

from __future__ import annotations

import pytest

from xpuperf.costmodel import workloads as w
from xpuperf.costmodel.checks import CostModelError

EXACT = {
    "resnet50": 25_557_032,
    "resnet101": 44_549_160,
    "resnet152": 60_192_808,
    "vgg16": 138_357_544,
    "alexnet": 61_100_840,
    "inception_v3_aux": 27_161_264,
    "bert_large": 335_141_888,
    "gpt2": 124_439_808,
    "gpt2-medium": 354_823_168,
    "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
}


@pytest.mark.parametrize(("name", "count"), sorted(EXACT.items()))
def test_exact_parameter_counts(name: str, count: int) -> None:
    assert w.model(name).n_params == count


def test_derived_counts_by_hand() -> None:
    # Inception-v3 aux head: 1×1 768→128 conv + BN (98,304 + 256), 5×5 128→768 conv + BN
    # (2,457,600 + 1,536), fc 768→1000 (769,000) = 3,326,696
    assert w.model("inception_v3").n_params == 27_161_264 - 3_326_696 == 23_834_568
    # BERT pooler: 1024×1024 + 1024
    assert w.model("bert_large_nopooler").n_params == 335_141_888 - 1_049_600


@pytest.mark.parametrize(
    ("name", "rounded_M"),
    [("resnet50", 25.6), ("resnet101", 44.5), ("resnet152", 60.2), ("vgg16", 138.4),
     ("inception_v3", 23.8), ("inception_v3_aux", 27.2), ("alexnet", 61.1)],
)  # fmt: skip
def test_rounded_figures_of_formulas_md(name: str, rounded_M: float) -> None:
    assert round(w.model(name).n_params / 1e6, 1) == rounded_M


def test_bert_large_is_the_340m_model() -> None:
    assert 330e6 < w.model("bert_large").n_params < 345e6


def test_tensor_counts_match_torchvision() -> None:
    assert len(w.model("resnet50").tensors) == 161  # len(list(resnet50().parameters()))
    assert len(w.model("vgg16").tensors) == 32


def test_backward_order_and_dtype() -> None:
    m = w.model("alexnet")
    sizes = m.backward_sizes_B("fp16")
    assert sizes[0] == 1000 * 2  # classifier bias is the first gradient ready
    assert sizes[-1] == 64 * 3 * 11 * 11 * 2  # first conv weight is the last one
    assert sizes[-2] == 64 * 2  # registration order reversed: its bias just before
    assert sum(sizes) == m.grad_bytes("bf16") == 2 * m.n_params
    assert m.grad_bytes() == 4 * m.n_params


def test_even_split() -> None:
    wl = w.even_split(1003, 10)
    sizes = [n for _, n in wl.tensors]
    assert wl.n_params == 1003
    assert len(sizes) == 10
    assert max(sizes) - min(sizes) == 1
    assert len(w.even_split(3, 100).tensors) == 3


def test_names_and_errors() -> None:
    assert w.model("GPT2_medium").name == "gpt2-medium"
    with pytest.raises(CostModelError):
        w.model("resnet18")
    with pytest.raises(CostModelError):
        w.dtype_bytes("fp8")
    with pytest.raises(CostModelError):
        w.even_split(0)


# torchvision weights metadata "_ops" (GFLOPS, counted as multiply-accumulates of conv and
# linear layers at 224×224, Inception-v3 at 299×299)
TORCHVISION_GMACS = {
    "resnet50": 4.089,
    "resnet101": 7.801,
    "resnet152": 11.514,
    "vgg16": 15.470,
    "alexnet": 0.714,
    "inception_v3": 5.713,
}


@pytest.mark.parametrize(("name", "gmacs"), sorted(TORCHVISION_GMACS.items()))
def test_forward_macs_match_torchvision(name: str, gmacs: float) -> None:
    assert w.model(name).forward_macs / 1e9 == pytest.approx(gmacs, abs=0.0005)


def test_vgg16_backward_compute_by_hand() -> None:
    """VGG-16 backward in backward order: the three FC layers come first and carry 2 × their
    MACs (dgrad + wgrad) = 2 × 123,642,856; the first conv (3→64, 224², 1,728·50,176 =
    86,704,128 MACs) has no dgrad. Share of the FC layers = 2·123.6 M / (2·15.470 G − 86.7 M)."""
    wl = w.model("vgg16")
    fc = 25088 * 4096 + 4096 * 4096 + 4096 * 1000
    conv1 = 64 * 3 * 9 * 224 * 224
    per = wl.backward_compute_s(1.0)
    assert sum(per) == pytest.approx(1.0)
    assert sum(per[:6]) == pytest.approx(2 * fc / (2 * wl.forward_macs - conv1))
    assert sum(per[:6]) < 0.01  # 90 % of the gradient bytes, < 1 % of the backward compute
    assert per[-1] == pytest.approx(conv1 / (2 * wl.forward_macs - conv1))  # features.0.weight
    assert per[0] == 0.0  # classifier.6.bias: ready as soon as backward starts


def test_transformers_keep_size_proportional_readiness() -> None:
    # linear layers do params MACs per token: compute ∝ size already (embeddings aside)
    assert w.model("bert_large").backward_compute_s(1.0) is None
    assert w.even_split(1000).backward_compute_s(1.0) is None
