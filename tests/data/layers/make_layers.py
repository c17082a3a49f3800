"""Write bert_base_layers.csv: the parameter tensors of a BERT-base encoder built with PyTorch.

Run: ``python tests/data/layers/make_layers.py`` (torch only; written with torch 2.13.0 CPU).

The model is BERT-base (Devlin et al. 2019: L=12, H=768, A=12, feed-forward 3072, vocab 30522,
512 positions, 2 token types) assembled from ``torch.nn`` modules in the order of Hugging Face
``BertModel``'s modules (embeddings, 12 encoder layers, pooler; query, key and value fused in
one ``in_proj`` tensor, as ``nn.MultiheadAttention`` registers them); its 109,482,240 parameters
are the count of ``BertModel(BertConfig())``. Rows: one per tensor of
``named_parameters()`` in registration (forward) order, with ``macs`` = forward multiply-
accumulates per sample owned by the tensor at sequence length 512: in × out × 512 for a linear
layer's weight (the attention projections inside ``nn.MultiheadAttention`` included; the
pooler sees one token), 0 for embeddings, biases and LayerNorm; the attention score matmuls
own no parameter and are left out (as the presets do).
"""

from __future__ import annotations

import csv
from pathlib import Path

import torch
from torch import nn

SEQ = 512


class BertBase(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(30522, 768)
        self.position_embeddings = nn.Embedding(512, 768)
        self.token_type_embeddings = nn.Embedding(2, 768)
        self.embeddings_norm = nn.LayerNorm(768)
        layer = nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
        self.pooler = nn.Linear(768, 768)


def macs(name: str, p: torch.Tensor) -> int:
    """Forward MACs per sample owned by a parameter tensor (module docstring)."""
    if p.dim() != 2 or "embeddings" in name:
        return 0
    tokens = 1 if name.startswith("pooler") else SEQ  # the pooler sees the first token only
    return p.numel() * tokens


def main() -> None:
    torch.manual_seed(0)
    model = BertBase()
    out = Path(__file__).with_name("bert_base_layers.csv")
    with out.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["name", "params", "macs"])
        for name, p in model.named_parameters():
            w.writerow([name, p.numel(), macs(name, p)])
    total = sum(p.numel() for p in model.parameters())
    print(f"{out}: {total:,} parameters")


if __name__ == "__main__":
    main()
