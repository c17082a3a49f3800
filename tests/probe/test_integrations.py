"""HF Trainer and Lightning callbacks (driven with fake framework objects, no framework needed)
and the PyTorch helpers (single-process, skipped without torch)."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

from xpuperf.probe import ProbeError, hf, lightning


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def tick(self, dt: float) -> None:
        self.t += dt


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """Make every StepProbe created by a callback use a fake clock."""
    fake = FakeClock()
    from xpuperf.probe import recorder

    original = recorder.StepProbe.__init__

    def init(self: recorder.StepProbe, *args: object, **kwargs: object) -> None:
        kwargs["clock"] = fake
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(recorder.StepProbe, "__init__", init)
    return fake


# --- HuggingFace ------------------------------------------------------------------------------


def test_hf_callback_records_one_step_per_optimizer_step(tmp_path: Path, clock: FakeClock) -> None:
    cb = hf.ProbeCallbackBase(tmp_path, flush_every=1)
    args = SimpleNamespace(
        process_index=1,
        local_process_index=1,
        world_size=2,
        per_device_train_batch_size=8,
        gradient_accumulation_steps=4,
    )
    state = SimpleNamespace(global_step=0)
    cb.on_train_begin(args, state, None, model=None)
    cb.on_epoch_begin(args, state, None)
    for i in range(3):
        clock.tick(0.01)  # data loading
        cb.on_step_begin(args, state, None)
        clock.tick(0.10)  # forward + backward of 4 micro-batches
        cb.on_pre_optimizer_step(args, state, None)
        clock.tick(0.02)
        cb.on_optimizer_step(args, state, None)
        clock.tick(0.001)  # scheduler, zero_grad
        state.global_step += 1
        cb.on_step_end(args, state, None)
        if i == 1:
            clock.tick(5.0)  # evaluation after step 2: must not land in step 3
            cb.on_evaluate(args, state, None)
    cb.on_train_end(args, state, None)
    cb.on_evaluate(args, state, None)  # trainer.evaluate() after training: no error
    recs = lines(tmp_path / "rank1.jsonl")
    assert [r["step"] for r in recs] == [1, 2, 3]
    for r in recs:
        assert r["samples"] == 32
        assert r["data_s"] == pytest.approx(0.01)
        assert r["compute_s"] == pytest.approx(0.12)  # compute + optimizer
        assert r["optimizer_s"] == pytest.approx(0.02)
        assert r["step_time_s"] == pytest.approx(0.131)
        assert "forward_s" not in r


def test_hf_callback_without_optimizer_events_puts_the_step_in_compute(
    tmp_path: Path, clock: FakeClock
) -> None:
    cb = hf.ProbeCallbackBase(tmp_path, samples_per_step=5)
    args, state = SimpleNamespace(process_index=0), SimpleNamespace(global_step=0)
    cb.on_train_begin(args, state, None)
    cb.on_step_begin(args, state, None)
    clock.tick(0.2)
    state.global_step = 1
    cb.on_step_end(args, state, None)
    cb.on_train_end(args, state, None)
    (rec,) = lines(tmp_path / "rank0.jsonl")
    assert (rec["compute_s"], rec["samples"]) == (pytest.approx(0.2), 5)


def test_hf_probe_callback_subclasses_trainer_callback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = types.ModuleType("transformers")

    class TrainerCallback:
        def on_log(self, *args: object, **kwargs: object) -> None:
            pass

    fake.TrainerCallback = TrainerCallback  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "transformers", fake)
    monkeypatch.setattr(hf, "_CACHE", {})
    from xpuperf.probe.hf import ProbeCallback

    cb = ProbeCallback(tmp_path)
    assert isinstance(cb, TrainerCallback)
    assert isinstance(cb, hf.ProbeCallbackBase)
    cb.on_log()  # inherited no-op event


def test_hf_probe_callback_needs_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # import fails
    monkeypatch.setattr(hf, "_CACHE", {})
    with pytest.raises(ImportError, match="pip install transformers"):
        from xpuperf.probe.hf import ProbeCallback  # noqa: F401
    with pytest.raises(AttributeError):
        hf.Nothing  # noqa: B018


# --- Lightning --------------------------------------------------------------------------------


class Batch:
    def __init__(self, n: int) -> None:
        self.shape = (n, 3)


def test_lightning_callback_splits_forward_backward_optimizer(
    tmp_path: Path, clock: FakeClock
) -> None:
    cb = lightning.ProbeCallbackBase(tmp_path)
    trainer = SimpleNamespace(global_rank=2, local_rank=0, world_size=4)
    cb.on_train_start(trainer, None)
    cb.on_train_epoch_start(trainer, None)
    for i in range(4):
        clock.tick(0.003)
        cb.on_train_batch_start(trainer, None, (Batch(16), Batch(16)), i)
        clock.tick(0.02)
        cb.on_before_backward(trainer, None, None)
        clock.tick(0.04)
        cb.on_after_backward(trainer, None)
        clock.tick(0.01)
        cb.on_train_batch_end(trainer, None, None, None, i)
        if i == 1:
            clock.tick(3.0)
            cb.on_validation_end(trainer, None)
    cb.on_train_end(trainer, None)
    cb.on_validation_end(trainer, None)  # trainer.validate() after fit: no error
    recs = lines(tmp_path / "rank2.jsonl")
    assert [r["step"] for r in recs] == [0, 1, 2, 3]
    for r in recs:
        assert r["samples"] == 16
        assert (r["data_s"], r["forward_s"], r["backward_s"], r["optimizer_s"]) == pytest.approx(
            (0.003, 0.02, 0.04, 0.01)
        )
        assert r["step_time_s"] == pytest.approx(0.073)


def test_lightning_probe_callback_subclasses_callback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = types.ModuleType("lightning")
    sub = types.ModuleType("lightning.pytorch")

    class Callback:
        pass

    sub.Callback = Callback  # type: ignore[attr-defined]
    pkg.pytorch = sub  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "lightning", pkg)
    monkeypatch.setitem(sys.modules, "lightning.pytorch", sub)
    monkeypatch.setattr(lightning, "_CACHE", {})
    cb = lightning.ProbeCallback(tmp_path, samples_per_step=4)
    assert isinstance(cb, Callback)
    assert cb.samples_per_step == 4


def test_lightning_probe_callback_needs_lightning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lightning", None)
    monkeypatch.setitem(sys.modules, "pytorch_lightning", None)
    monkeypatch.setattr(lightning, "_CACHE", {})
    with pytest.raises(ImportError, match="pip install lightning"):
        lightning.ProbeCallback  # noqa: B018


@pytest.mark.parametrize(
    ("batch", "n"),
    [
        (Batch(5), 5),
        ([Batch(6), Batch(6)], 6),
        ({"input_ids": Batch(7)}, 7),
        ([[Batch(8)]], 8),
        ({}, None),
        ("text", None),
        (SimpleNamespace(shape=()), None),
    ],
)
def test_batch_len(batch: object, n: int | None) -> None:
    assert lightning.batch_len(batch) == n


# --- PyTorch ----------------------------------------------------------------------------------


@pytest.fixture
def torch_mod() -> types.ModuleType:
    return pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")


def test_grad_ready_hooks_split_backward(tmp_path: Path, torch_mod: types.ModuleType) -> None:
    torch = torch_mod
    from xpuperf.probe import StepProbe
    from xpuperf.probe.pytorch import attach_grad_ready, attach_if_distributed

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 1))
    probe = StepProbe(tmp_path, rank=0)
    handles = attach_grad_ready(probe, model)
    assert len(handles) == 4
    assert attach_if_distributed(probe, model) == []  # no process group
    with probe.step(), probe.phase("backward"):
        model(torch.randn(4, 8)).sum().backward()
    for h in handles:
        h.remove()
    probe.close()
    (rec,) = lines(tmp_path / "rank0.jsonl")
    assert rec["backward_s"] > 0
    assert 0 <= rec["comm_s"] < rec["step_time_s"]


def test_ddp_comm_hook_on_a_one_rank_group(tmp_path: Path, torch_mod: types.ModuleType) -> None:
    torch = torch_mod
    import torch.distributed as dist

    from xpuperf.probe import StepProbe
    from xpuperf.probe.pytorch import attach_ddp, cuda_sync

    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 4))
        probe = StepProbe(tmp_path, rank=0)
        with pytest.raises(ProbeError, match="DistributedDataParallel"):
            attach_ddp(probe, torch.nn.Linear(2, 2))
        hook = attach_ddp(probe, model)
        ref = torch.nn.Linear(16, 4)
        ref.load_state_dict(model.module.state_dict())
        x = torch.randn(8, 16)
        for _ in range(3):
            with probe.step(samples=8):
                with probe.phase("forward"):
                    loss = model(x).pow(2).mean()
                with probe.phase("backward"):
                    loss.backward()
        ref(x).pow(2).mean().backward()
        probe.close()
    finally:
        dist.destroy_process_group()
    assert hook.buckets >= 3
    assert hook.last_done_s is not None
    assert hook.last_done_s >= hook.last_launch_s
    # same math as DDP's default hook: gradients of one rank are unchanged (3 accumulations)
    assert torch.allclose(model.module.weight.grad, 3 * ref.weight.grad, atol=1e-6)
    recs = lines(tmp_path / "rank0.jsonl")
    assert len(recs) == 3
    assert all(r["comm_s"] >= 0 and r["backward_s"] > 0 for r in recs)
    if not torch.cuda.is_available():
        with pytest.raises(ProbeError, match="CUDA is not available"):
            cuda_sync()
