"""Write the synthetic tqdm samples of this folder (not a test; pytest collects ``test_*.py``).

Each sample is a training log as the framework prints it when stdout is redirected to a file:
tqdm redraws its bar with ``\\r`` (many updates on one physical line), nested bars (evaluation
under the training bar) move down with ``\\n`` and back up with ``ESC[A``, ``tqdm.write`` clears
the bar, prints the message and redraws the bar. The bars are rendered the way
``tqdm.format_meter`` (tqdm 4.x) and ultralytics' own ``TQDM`` (8.3.18x+) lay them out; every
update happens at a time given by an explicit step schedule (below each sample), so the values
the tests expect are worked out by hand from the schedule, never from the reader's output.

    python tests/data/formats_tqdm/make_samples.py      # rewrites the .log files

Times are exact fractions (no float rounding decides a clock tick).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

HERE = Path(__file__).resolve().parent
F = Fraction
UTF = " " + "".join(chr(c) for c in range(0x258F, 0x2587, -1))  # tqdm's block characters
ASCII = " 123456789#"


def blocks(frac: float, charset: str = UTF, width: int = 10) -> str:
    syms = len(charset) - 1
    full, part = divmod(int(frac * width * syms), syms)
    out = charset[-1] * full
    if full < width:
        out += charset[part] + charset[0] * (width - full - 1)
    return out


def clock(t: F | float) -> str:
    m, s = divmod(int(t), 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Rate:
    """tqdm's displayed rate: EMA of dn and dt between displays (smoothing 0.3), or the average
    since the start (smoothing 0, as Lightning's training bar)."""

    def __init__(self, smoothing: float = 0.3) -> None:
        self.a, self.dn, self.dt, self.calls = smoothing, 0.0, 0.0, 0
        self.last_n, self.last_t, self.n0 = None, None, None

    def __call__(self, n: int, t: F) -> float | None:
        if self.last_n is None:
            self.last_n, self.last_t, self.n0 = n, t, n
            return None
        if self.a == 0:
            rate = (n - self.n0) / float(t) if t else None
        else:
            dn, dt = n - self.last_n, float(t - self.last_t)
            if dn and dt:
                b = 1 - self.a
                self.dn = self.a * dn + b * self.dn
                self.dt = self.a * dt + b * self.dt
                self.calls += 1
            rate = self.dn / self.dt if self.calls else None
        self.last_n, self.last_t = n, t
        return rate or None


def meter(desc: str, n: int, total: int | None, t: F, rate: float | None, post: str = "",
          charset: str = UTF, ncols0: bool = False, noinv: bool = False) -> str:  # fmt: skip
    if rate:
        rf = f"{1 / rate:5.2f}s/it" if 1 / rate > 1 and not noinv else f"{rate:5.2f}it/s"
    else:
        rf = "?it/s"
    post = f", {post}" if post else ""
    head = f"{desc}: " if desc else ""
    if total is None:
        return f"{head}{n}it [{clock(t)}, {rf}{post}]"
    rem = clock((total - n) / rate) if rate else "?"
    pct = f"{100 * n / total:3.0f}%"
    if ncols0:
        return f"{head}{pct} {n}/{total} [{clock(t)}<{rem}, {rf}{post}]"
    return f"{head}{pct}|{blocks(n / total, charset)}| {n}/{total} [{clock(t)}<{rem}, {rf}{post}]"


def model_summary(model: str, params: str, mb: str) -> list[str]:
    """Lightning's model summary table."""
    rule = "-" * 40
    head = [
        "",
        "  | Name  | Type       | Params",
        rule,
        f"0 | model | {model:<10} | {params}",
        rule,
    ]
    rows = [(params, "Trainable params"), ("0", "Non-trainable params"), (params, "Total params"),
            (mb, "Total estimated model params size (MB)")]  # fmt: skip
    return head + [f"{a:<9} {b}" for a, b in rows]


def nested(text: str) -> str:
    """A bar drawn at position 1 (under the training bar) into a file."""
    return "\n\r" + text + "\x1b[A"


# --- A: Lightning 2.x, 1 GPU -------------------------------------------------------------------
# TQDMProgressBar(refresh_rate=10): displays at batches 10, 20, …, 120 (and 0 at each reset).
# Epoch 0: batch i (1-based) ends at t = 3.0 + 0.5 (i - 1) s (a 3.0 s first batch).
# Epoch 1: batches 1–80 end at 0.5 i; 81–100 take 1.0 s (t = 40 + (i - 80)); 101–120 take 0.5 s
# (t = 60 + 0.5 (i - 100)). Validation (20 batches, 0.1 s each) after each epoch, display every
# 10 batches, nested with leave=False; the sanity check (2 batches) before training.
def lightning2() -> str:
    out = [
        "GPU available: True (cuda), used: True",
        "TPU available: False, using: 0 TPU cores",
        "HPU available: False, using: 0 HPUs",
        "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]",
        *model_summary("ResNet", "11.2 M", "44.712"),
    ]
    s = "Sanity Checking: |          | 0/? [00:00<?, ?it/s]"
    s += "\rSanity Checking DataLoader 0:   0%|          | 0/2 [00:00<?, ?it/s]"
    s += "\rSanity Checking DataLoader 0: 100%|██████████| 2/2 [00:00<00:00,  9.71it/s]"
    s += "\r" + " " * 78 + "\r"
    s += "\rTraining: |          | 0/? [00:00<?, ?it/s]"
    post = "v_num=0"
    for epoch, ends in enumerate((_l2_epoch0(), _l2_epoch1())):
        rate = Rate(0)
        s += "\r" + meter(f"Epoch {epoch}", 0, 120, F(0), rate(0, F(0)), post, noinv=True)
        for i in range(10, 121, 10):
            loss = f"{2.31 - 0.004 * (epoch * 120 + i):.3f}"
            post = f"v_num=0, train_loss={loss}" + (", val_loss=1.884" if epoch else "")
            s += "\r" + meter(f"Epoch {epoch}", i, 120, ends[i], rate(i, ends[i]), post,
                              noinv=True)  # fmt: skip
        t0 = ends[120]
        val = "Validation: |          | 0/? [00:00<?, ?it/s]"
        s += nested(val)
        vr = Rate()
        for j in (0, 10, 20):
            tv = F(j, 10)
            s += nested(meter("Validation DataLoader 0", j, 20, tv, vr(j, tv)))
        s += nested(" " * 78)
        post = f"v_num=0, train_loss={loss}, val_loss={1.884 - 0.1 * epoch:.3f}"
        t = t0 + 2
        s += "\r" + meter(f"Epoch {epoch}", 120, 120, t, 120 / float(t), post, noinv=True)
    s += "\n`Trainer.fit` stopped: `max_epochs=2` reached."
    return "\n".join(out) + "\n" + s + "\n"


def _l2_epoch0() -> dict[int, F]:
    return {i: F(3) + F(1, 2) * (i - 1) for i in range(1, 121)}


def _l2_epoch1() -> dict[int, F]:
    t: dict[int, F] = {}
    for i in range(1, 121):
        if i <= 80:
            t[i] = F(1, 2) * i
        elif i <= 100:
            t[i] = F(40) + (i - 80)
        else:
            t[i] = F(60) + F(1, 2) * (i - 100)
    return t


# --- B: Lightning 1.x, validation counted in the epoch bar, ASCII bars, s/it ---------------------
# 16 training batches + 4 validation batches = total 20 per epoch; display at every batch, each
# training display twice (the second with the new loss in the postfix).
# Epoch 0: training batch i ends at 6.0 + 2.5 (i - 1) s; epoch 1: at 2.5 i s. Validation batches
# take 0.5 s each after the last training batch (a 'Validating' bar and the epoch bar both move).
def lightning1() -> str:
    out = [
        "GPU available: True, used: True",
        "TPU available: False, using: 0 TPU cores",
        "IPU available: False, using: 0 IPUs",
        "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]",
        *model_summary("GPT2LMHead", "124 M", "248.880"),
    ]
    s = "Validation sanity check: 0it [00:00, ?it/s]"
    s += "\rValidation sanity check:   0%|          | 0/2 [00:00<?, ?it/s]"
    s += "\rValidation sanity check: 100%|##########| 2/2 [00:01<00:00,  1.62it/s]"
    s += "\r" + " " * 72 + "\r"
    s += "\rTraining: 0it [00:00, ?it/s]"
    s += "\rTraining:   0%|          | 0/20 [00:00<?, ?it/s]"
    loss = 10.47
    for epoch in range(2):
        rate = Rate(0)
        desc = f"Epoch {epoch}"
        s += "\r" + meter(desc, 0, 20, F(0), rate(0, F(0)), charset=ASCII)
        old = f"loss={loss:.3f}, v_num=0"
        for i in range(1, 17):
            t = F(6) + F(5, 2) * (i - 1) if epoch == 0 else F(5, 2) * i
            r = rate(i, t)
            s += "\r" + meter(desc, i, 20, t, r, old, charset=ASCII)
            loss -= 0.125
            old = f"loss={loss:.3f}, v_num=0"
            s += "\r" + meter(desc, i, 20, t, r, old, charset=ASCII)
        s += nested("Validating: 0it [00:00, ?it/s]")
        s += nested("Validating:   0%|          | 0/4 [00:00<?, ?it/s]")
        vr = Rate()
        for j in range(1, 5):
            tv = F(j, 2)
            s += nested(meter("Validating", j, 4, tv, vr(j, tv), charset=ASCII))
            te = t + tv
            s += "\r" + meter(desc, 16 + j, 20, te, rate(16 + j, te), old, charset=ASCII)
        s += "\n"
    return "\n".join(out) + "\n" + s


# --- C: HF Trainer, torchrun with 2 processes ----------------------------------------------------
# 200 optimizer steps (per-device batch 8 x accumulation 4 x 2 processes = 64), bar displayed at
# every step (smoothing 0.3). Step n ends at 6.5 + 1.25 (n - 1) s for n <= 100; an evaluation at
# step 100 (25 batches of 0.4 s, nested bar without description) takes 10 s; then step 101 ends
# at 141.5 s and steps 102-150 take 1.25 s, 151-170 take 2.5 s (throttled), 171-200 take 1.25 s.
def hf_trainer() -> str:
    ts = "2024-03-02 10:00:0"
    out = [
        "$ torchrun --nproc_per_node=2 run_clm.py --model_name_or_path gpt2 --do_train --do_eval "
        "--per_device_train_batch_size 8 --gradient_accumulation_steps 4 --max_steps 200 "
        "--evaluation_strategy steps --eval_steps 100 --output_dir /tmp/clm",
        "[2024-03-02 09:59:41,201] torch.distributed.run: [WARNING] ",
        "[2024-03-02 09:59:41,201] torch.distributed.run: [WARNING] *****************************"
        "************",
        "[2024-03-02 09:59:41,201] torch.distributed.run: [WARNING] Setting OMP_NUM_THREADS "
        "environment variable for each process to be 1 in default, to avoid your system being "
        "overloaded, please further tune the variable for optimal performance in your "
        "application as needed. ",
        f"[INFO|trainer.py:1812] {ts}5,123 >> ***** Running training *****",
        f"[INFO|trainer.py:1813] {ts}5,123 >>   Num examples = 12,800",
        f"[INFO|trainer.py:1814] {ts}5,123 >>   Num Epochs = 1",
        f"[INFO|trainer.py:1815] {ts}5,123 >>   Instantaneous batch size per device = 8",
        f"[INFO|trainer.py:1818] {ts}5,123 >>   Total train batch size (w. parallel, distributed "
        "& accumulation) = 64",
        f"[INFO|trainer.py:1819] {ts}5,123 >>   Gradient Accumulation steps = 4",
        f"[INFO|trainer.py:1820] {ts}5,123 >>   Total optimization steps = 200",
        f"[INFO|trainer.py:1821] {ts}5,124 >>   Number of trainable parameters = 124,439,808",
    ]
    rate = Rate()
    s = "\r" + meter("", 0, 200, F(0), rate(0, F(0)))
    for n in range(1, 201):
        t = _hf_time(n)
        s += "\r" + meter("", n, 200, t, rate(n, t))
        if n == 100:
            s += f"[INFO|trainer.py:3158] {ts}7,401 >> ***** Running Evaluation *****\n"
            s += f"[INFO|trainer.py:3160] {ts}7,401 >>   Num examples = 400\n"
            s += f"[INFO|trainer.py:3163] {ts}7,401 >>   Batch size = 8\n"
            vr = Rate()
            for j in range(26):
                tv = F(2, 5) * j
                s += nested(meter("", j, 25, tv, vr(j, tv)))
            s += "\r" + " " * 60 + "\r"
            s += "{'eval_loss': 3.0412, 'eval_runtime': 10.02, 'eval_samples_per_second': 39.92, "
            s += "'eval_steps_per_second': 2.495, 'epoch': 0.5}\n"
            s += "\r" + meter("", 100, 200, t + 10, rate(100, t + 10))
    s += "\n\n\nTraining completed. Do not forget to share your model on huggingface.co/models =)"
    s += "\n\n\n"
    s += "{'train_runtime': 291.4, 'train_samples_per_second': 43.92, "
    s += "'train_steps_per_second': 0.686, 'train_loss': 3.112, 'epoch': 1.0}\n"
    s += "\r" + meter("", 200, 200, F(291), rate(200, F(291))) + "\n"
    return "\n".join(out) + "\n" + s


def _hf_time(n: int) -> F:
    if n <= 100:
        return F(13, 2) + F(5, 4) * (n - 1)
    if n <= 150:
        return F(283, 2) + F(5, 4) * (n - 101)
    if n <= 170:
        return _hf_time(150) + F(5, 2) * (n - 150)
    return _hf_time(170) + F(5, 4) * (n - 170)


# --- D: ultralytics YOLOv8 (tqdm bar), DDP on 2 GPUs ---------------------------------------------
# 60 iterations per epoch, 3 epochs. ultralytics sets the description (losses) in each iteration
# before tqdm counts it, so the display of n = k comes at the end of iteration k + 1 (1-based):
# epoch 1 (first iteration 4.0 s, then 0.8 s): n = k shown at 4.0 + 0.8 k s; epochs 2, 3: at
# 0.8 (k + 1) s; close() shows n = 60 at the end of the last iteration (4.0 + 0.8 * 59 = 51.2 s;
# 48.0 s). A validation bar (4 batches) follows each epoch.
def ultralytics_tqdm() -> str:
    blue, bold, end = "\x1b[34m", "\x1b[1m", "\x1b[0m"
    out = [
        "Ultralytics YOLOv8.1.0 🚀 Python-3.10.12 torch-2.1.2+cu121 CUDA:0 (NVIDIA A100-SXM4-40GB, "
        "40377MiB)",
        "                                                      CUDA:1 (NVIDIA A100-SXM4-40GB, "
        "40377MiB)",
        f"{blue}{bold}engine/trainer: {end}task=detect, mode=train, model=yolov8s.pt, "
        "data=coco1k.yaml, epochs=3, batch=32, imgsz=640, device=0,1, workers=8, amp=True",
        "DDP: debug command /usr/bin/python3 -m torch.distributed.run --nproc_per_node 2 "
        "--master_port 51213 /root/.config/Ultralytics/DDP/_temp_k2l7q0vh140147.py",
        f"{blue}{bold}train: {end}Scanning /data/coco1k/labels/train2017.cache... 958 images, "
        "2 backgrounds, 0 corrupt: 100%|██████████| 960/960 [00:00<?, ?it/s]",
        f"{blue}{bold}val: {end}Scanning /data/coco1k/labels/val2017.cache... 128 images, "
        "0 backgrounds, 0 corrupt: 100%|██████████| 128/128 [00:00<?, ?it/s]",
        "Plotting labels to runs/detect/train/labels.jpg... ",
        f"{blue}{bold}optimizer:{end} SGD(lr=0.01, momentum=0.9) with parameter groups "
        "57 weight(decay=0.0), 64 weight(decay=0.0005), 63 bias(decay=0.0)",
        "Image sizes 640 train, 640 val",
        "Using 8 dataloader workers",
        f"Logging results to {bold}runs/detect/train{end}",
        "Starting training for 3 epochs...",
    ]
    s = ""
    head = ("%11s" * 7) % ("Epoch", "GPU_mem", "box_loss", "cls_loss", "dfl_loss", "Instances",
                           "Size")  # fmt: skip
    for epoch in (1, 2, 3):
        s += "\n" + head + "\n"
        rate = Rate()
        shown = [(0, F(0))]
        for k in range(60):
            shown.append((k, (F(4) + F(4, 5) * k) if epoch == 1 else F(4, 5) * (k + 1)))
        shown.append((60, shown[-1][1]))
        for i, (k, t) in enumerate(shown):
            loss = 1.3 - 0.02 * epoch - 0.001 * k
            losses = (loss, loss + 0.41, loss - 0.11)
            desc = ("%11s" * 2 + "%11.4g" * 5) % (f"{epoch}/3", "5.21G", *losses, 80 + k % 23, 640)
            s += ("\r" if i else "") + meter(desc, k, 60, t, rate(k, t))
        s += "\n"
        vdesc = ("%22s" + "%11s" * 6) % ("Class", "Images", "Instances", "Box(P", "R", "mAP50",
                                        "mAP50-95)")  # fmt: skip
        vr = Rate()
        s += "\r".join(meter(vdesc, j, 4, F(j, 2), vr(j, F(j, 2))) for j in range(5)) + "\n"
        s += ("%22s" + "%11i" * 2 + "%11.3g" * 4) % ("all", 128, 929, 0.6, 0.5, 0.55, 0.4)
        s += "\n"
    s += "\n3 epochs completed in 0.045 hours.\n"
    return "\n".join(out) + "\n" + s


# --- E: ultralytics >= 8.3.18x (its own TQDM class, no brackets), 1 GPU --------------------------
# 50 iterations per epoch, 2 epochs; the display of n = k comes at the end of iteration k + 1:
# epoch 1 (first iteration 3.0 s, then 0.5 s) at 2.5 + 0.5 k s, epoch 2 at 0.5 (k + 1) s; close()
# shows n = 50 at the end of the last iteration. Elapsed is printed '12.5s' under a minute.
def _ultra(desc: str, n: int, total: int, t: F, state: dict) -> str:
    dt, dn = float(t - state["t"]), n - state["n"]
    if dt > 0.01:
        state["rate"] = 0.3 * (dn / dt) + 0.7 * state["rate"]
    rate = n / float(t) if n >= total and t > 0 else state["rate"]
    state["t"], state["n"] = t, n
    rate_s = f"{rate:.1f}it/s" if rate > 0 else ""
    el = f"{float(t):.1f}s"
    rem = f"<{(total - n) / rate:.1f}s" if 0 < n < total and rate > 0 else ""
    frac = min(1.0, n / total)
    filled = int(frac * 12)
    bar = "━" * filled + "─" * (12 - filled)
    if filled < 12 and frac * 12 - filled > 0.5:
        bar = bar[:filled] + "╸" + bar[filled + 1 :]
    return f"\r\x1b[K{desc}: {n / total * 100:.0f}% {bar} {n}/{total} {rate_s} {el}{rem}"


def ultralytics_own() -> str:
    out = [
        "Ultralytics 8.3.204 🚀 Python-3.12.3 torch-2.8.0+cu128 CUDA:0 (NVIDIA L4, 22478MiB)",
        "\x1b[34m\x1b[1mengine/trainer: \x1b[0magnostic_nms=False, amp=True, batch=16, "
        "data=coco128.yaml, epochs=2, imgsz=640, model=yolo11n.pt, workers=8",
        "Starting training for 2 epochs...",
    ]
    s = ""
    head = ("%11s" * 7) % ("Epoch", "GPU_mem", "box_loss", "cls_loss", "dfl_loss", "Instances",
                           "Size")  # fmt: skip
    for epoch in (1, 2):
        s += "\n" + head + "\n"
        state = {"t": F(0), "n": 0, "rate": 0.0}
        for k in range(50):
            t = F(5, 2) + F(1, 2) * k if epoch == 1 else F(1, 2) * (k + 1)
            desc = ("%11s" * 2 + "%11.4g" * 5) % (f"{epoch}/2", "2.41G", 1.2, 1.6, 1.1, 40, 640)
            s += _ultra(desc, k, 50, t, state)
        s += _ultra(desc, 50, 50, t, state) + "\n"
        vdesc = ("%22s" + "%11s" * 6) % ("Class", "Images", "Instances", "Box(P", "R", "mAP50",
                                        "mAP50-95)")  # fmt: skip
        vs = {"t": F(0), "n": 0, "rate": 0.0}
        s += "".join(_ultra(vdesc, j, 4, F(j, 2) + F(1, 2), vs) for j in range(1, 5)) + "\n"
        s += ("%22s" + "%11i" * 2 + "%11.3g" * 4) % ("all", 128, 929, 0.6, 0.5, 0.55, 0.4)
        s += "\n"
    return "\n".join(out) + "\n" + s


# --- F: accelerate loop on 2 nodes, srun -l (local main process of each node prints) ------------
# tqdm(range(1000), initial=500, desc="Steps"): a run resumed at step 500; display at every step,
# s/it below 1 it/s. Rank 0: step 500 + j ends at 5.0 + 2.0 (j - 1) s; rank 8 (node 2): at
# 6.2 + 2.0 (j - 1) s. Every 10 steps a tqdm.write message; the file ends with rank 0's bar cut
# mid-update (the job was killed).
def accelerate_ranks() -> str:
    out = [
        "srun -l -N 2 --ntasks-per-node=8 python train_sdxl.py --resume_from_checkpoint latest",
        "0: Resuming from checkpoint checkpoint-500",
        "8: Resuming from checkpoint checkpoint-500",
    ]
    lines = []
    for rank, first in ((0, F(5)), (8, F(31, 5))):
        rate = Rate()
        chunks = []
        cur = "\r" + meter("Steps", 500, 1000, F(0), rate(500, F(0)))
        for j in range(1, 31):
            t = first + 2 * (j - 1)
            cur += "\r" + meter("Steps", 500 + j, 1000, t, rate(500 + j, t),
                                f"loss=0.{1234 + 7 * j}, lr=1e-05")  # fmt: skip
            if j % 10 == 0:
                cur += "\r" + " " * 80 + "\r" + f"step {500 + j}: loss 0.{1234 + 7 * j}"
                chunks.append(f"{rank}: {cur}")
                cur = "\r" + meter("Steps", 500 + j, 1000, t, rate(500 + j, t))
        lines.append(chunks)
    for a, b in zip(*lines, strict=True):
        out += [a, b]
    out.append("0: \rSteps:  53%|█████▎    | 530/1000 [01:0")
    return "\n".join(out) + "\n"


# --- G: Lightning 1.x in Colab: no room for a bar (ncols=0): 'Epoch 0:  40% 80/200 [...]' ---------
# refresh_rate=20 (Lightning's Colab default); batch i ends at 2.0 + 0.25 i s; one epoch of 200
# batches without validation.
def lightning_colab() -> str:
    out = ["GPU available: True, used: True", "TPU available: False, using: 0 TPU cores"]
    rate = Rate(0)
    s = "Epoch 0: 0it [00:00, ?it/s]\r" + meter("Epoch 0", 0, 200, F(0), rate(0, F(0)), ncols0=True)
    for i in range(20, 201, 20):
        t = F(2) + F(1, 4) * i
        post = f"loss={2.0 - i / 400:.3g}, v_num=0"
        s += "\r" + meter("Epoch 0", i, 200, t, rate(i, t), post, ncols0=True)
    return "\n".join(out) + "\n" + s + "\n"


SAMPLES = {
    "lightning_2x_1gpu.log": lightning2,
    "lightning_1x_val_in_epoch_bar_ascii.log": lightning1,
    "hf_trainer_2gpu_torchrun.log": hf_trainer,
    "ultralytics_yolov8_ddp_2gpu.log": ultralytics_tqdm,
    "ultralytics_8.3_own_bar.log": ultralytics_own,
    "accelerate_srun_2nodes_resumed.log": accelerate_ranks,
    "lightning_1x_colab_ncols0.log": lightning_colab,
}

if __name__ == "__main__":
    for name, make in SAMPLES.items():
        (HERE / name).write_text(make(), encoding="utf-8", newline="")
