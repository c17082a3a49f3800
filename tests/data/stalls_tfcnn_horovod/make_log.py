"""Write horovod_4rank_stall.log: tf_cnn_benchmarks under Horovod, 4 ranks, two storage stalls.

The shape follows tf_cnn_benchmarks' own printing (benchmark_cnn.py: a header with the batch
size, then ``step<TAB>images/sec: MEAN +/- ERR (jitter = J)<TAB>loss`` at step 1 and every 10
steps, one line per rank, no rank id, MEAN = the running mean since step 1). Planted truth:
rank r takes 0.5 · (1 + 0.004 r) s per step of 64 images; the windows ending at steps 150 and
250 each take 4.0 s longer on EVERY rank (an input / storage stall hitting all ranks at once).
Run: ``python make_log.py`` (deterministic; the file is committed).
"""

from pathlib import Path

RANKS, BATCH, LAST = 4, 64, 300
STALL = {150: 4.0, 250: 4.0}  # window end step -> extra seconds on every rank
steps = [1, *range(10, LAST + 1, 10)]
lines = [
    "TensorFlow:  1.9",
    "Model:       resnet50",
    "Mode:        training",
    "Batch size:  256 global",
    "             64 per device",
    "Num GPUs:    4",
    "==========",
    "Generating model",
    "Running warm up",
    "Done warm up",
    "Step\tImg/sec\ttotal_loss",
]
elapsed = [0.0] * RANKS
prev = 0
for s in steps:
    for r in range(RANKS):
        elapsed[r] += (s - prev) * 0.5 * (1 + 0.004 * r) + STALL.get(s, 0.0)
    prev = s
    for r in range(RANKS):
        mean = BATCH * s / elapsed[r]
        lines.append(
            f"{s}\timages/sec: {mean:.1f} +/- 0.{r + 1} (jitter = 1.{r})\t{7.5 - s / 100:.3f}"
        )
lines += [
    "----------------------------------------------------------------",
    "total images/sec: 495.21",
    "----------------------------------------------------------------",
]
Path(__file__).with_name("horovod_4rank_stall.log").write_text("\n".join(lines) + "\n")
