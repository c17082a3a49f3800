"""Make a real ``trainer_state.json`` with HuggingFace's own ``Trainer`` (CPU, a few seconds).

Not a test and not imported by the project: it needs ``transformers`` and ``accelerate``, which
are NOT project dependencies. Run it in a throwaway venv that sees the CPU torch::

    python -m venv --system-site-packages /tmp/hfvenv
    /tmp/hfvenv/bin/pip install transformers accelerate
    /tmp/hfvenv/bin/python tests/data/formats_hf_trainer_state/make_sample.py \
        > tests/data/formats_hf_trainer_state/04_console_hf_trainer.txt 2>&1

What it runs: a randomly initialised 2-layer ``BertForSequenceClassification`` (hidden 64) built
from a config (no download), a synthetic dataset of 160 sequences of 32 tokens, 1 process on CPU,
``per_device_train_batch_size=8``, ``max_steps=40`` (2 epochs), ``logging_steps=5``, checkpoints
at steps 20 and 40 and ``trainer.save_state()`` after ``train()``; then a second ``Trainer``
resumes the same run from ``checkpoint-20`` and trains steps 21–40 (its console output is
swallowed). Files HF writes that are copied here byte for byte:

- ``checkpoint-40/trainer_state.json`` → ``02_checkpoint-40_trainer_state.json`` (saved in the
  training loop, BEFORE the final summary entry with ``train_runtime`` is logged);
- ``<output_dir>/trainer_state.json`` → ``03_trainer_state.json`` (``save_state()``: with the
  summary);
- the resumed run's ``<output_dir>/trainer_state.json`` → ``05_resumed_trainer_state.json``
  (``global_step`` 40, but the summary times only the 20 steps of the second ``train()``).

The console log (``{'loss': …}`` dict lines through tqdm) is what the first Trainer prints on
stdout and stderr.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

HERE = Path(__file__).resolve().parent
N_SAMPLES, SEQ_LEN, VOCAB = 160, 32, 1000


class Synthetic(torch.utils.data.Dataset):
    """Random token ids; the label is the parity of the first token, so the loss can fall."""

    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, VOCAB, (n, SEQ_LEN), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        ids = self.ids[i]
        return {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "labels": ids[0] % 2,
        }


def model() -> BertForSequenceClassification:
    """A 2-layer BERT classifier with hidden size 64, randomly initialised (no download)."""
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=SEQ_LEN,
        num_labels=2,
    )
    return BertForSequenceClassification(config)


def arguments(output_dir: str) -> TrainingArguments:
    """1 CPU process, 8 samples per step, 40 steps, a log entry every 5, a checkpoint every 20."""
    return TrainingArguments(
        output_dir=output_dir,
        use_cpu=True,
        per_device_train_batch_size=8,
        max_steps=40,
        logging_steps=5,
        save_strategy="steps",
        save_steps=20,
        learning_rate=1e-3,
        report_to="none",
        seed=0,
        dataloader_num_workers=0,
    )


def main() -> None:
    torch.set_num_threads(1)  # a shared 2-core machine
    data = Synthetic(N_SAMPLES)
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as tmp2:
        trainer = Trainer(model=model(), args=arguments(tmp), train_dataset=data)
        trainer.train()
        trainer.save_state()
        sys.stdout.flush()
        sys.stderr.flush()
        shutil.copyfile(
            Path(tmp) / "checkpoint-40" / "trainer_state.json",
            HERE / "02_checkpoint-40_trainer_state.json",
        )
        shutil.copyfile(Path(tmp) / "trainer_state.json", HERE / "03_trainer_state.json")
        quiet = io.StringIO()
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            resumed = Trainer(model=model(), args=arguments(tmp2), train_dataset=data)
            resumed.train(resume_from_checkpoint=str(Path(tmp) / "checkpoint-20"))
            resumed.save_state()
        shutil.copyfile(Path(tmp2) / "trainer_state.json", HERE / "05_resumed_trainer_state.json")


if __name__ == "__main__":
    main()
