#!/usr/bin/env python3
"""Layer cycles vs batch size, precision and sparsity, against t_layer = max(t_compute, t_stream).

Runs one training step of 784 -> 256 -> 10 on a 128 x 8 PE mesh of a WSE-2 for each setting and
reads fc1's forward and backward passes from report.json. Prints the markdown table of
docs/weight-streaming-study.md. Needs Fashion-MNIST where the configs' default data.dir looks
(/usr/share/datasets/fashion-mnist, installed by scripts/setup.sh).
Usage: docs/study/run_study.py [path/to/wse] [--threads N]   (default: build/release/wse, 2 threads;
the cycles are the same at any thread count)"""
import argparse, json, math, os, subprocess, sys, tempfile

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("wse", nargs="?", default="build/release/wse", help="the wse binary (default build/release/wse)")
ap.add_argument("--threads", type=int, default=2, help="wse run --threads (default 2)")
args = ap.parse_args()
wse = args.wse
Q, P, IN, OUT = 128, 8, 784, 256
IO_WAVELETS = 176.47 / 4  # per cycle, shared by the Q ingress ports
rate = min(1.0, IO_WAVELETS / Q)
# The cluster around the wafer (machines/wse2.yaml): the edge holds EDGE bytes of a stream before its
# pass starts; the rest leaves MemoryX when the pass's start has reached it (a credit up the tree)
# and arrives a latency later, at MemoryX's rate. One wafer: one SwarmX level.
EDGE, MX_RATE = 262144, 176.47
ROUND_TRIP = 2 * (850 + 1 * 850)  # memoryx_latency_cycles + levels x swarmx_latency_cycles, both ways


def run(batch, precision, sparsity):
    with tempfile.TemporaryDirectory(prefix="wse_study_") as d:
        cfg = os.path.join(d, "cfg.yaml")
        with open(cfg, "w") as f:
            f.write(f"""machine: wse2
mesh: {{width: {Q}, height: {P}}}
kernel: fc_train
model: {{layers: [{IN}, {OUT}, 10]}}
data: {{train_samples: {batch}, eval_samples: 0}}
training: {{batch_size: {batch}, max_steps: 1, precision: {precision}}}
""" + (f"sparsity: {{sparsity: {sparsity}, init_method: topk}}\n" if sparsity > 0 else ""))
        out = os.path.join(d, "out")  # wse refuses an --out that already holds something (cfg.yaml)
        subprocess.run([wse, "run", cfg, "--threads", str(args.threads), "--out", out], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "report.json")) as f:
            return json.load(f)


def model(batch, precision, sparsity, backward):
    """Per-PE cycles of the busiest column's weights: the stream at its port's rate vs the data
    tasks they trigger (every PE of the column runs every weight)."""
    br = math.ceil(batch / P)
    mixed = precision == "mixed"
    # The busiest column: its feature rows x 256 outputs, pruned; the last also streams the bias row.
    def weights(c):
        rows = IN * (c + 1) // Q - IN * c // Q
        return rows * OUT * (1 - sparsity) + (OUT if c == Q - 1 else 0)
    w = max(weights(c) for c in range(Q))
    per_wavelet = 1 if sparsity > 0 else (2 if mixed else 1)  # weights a wavelet carries
    wavelets = w / per_wavelet
    t_stream = wavelets / rate
    if not backward:
        simd = 2 if mixed else 1  # @fmachs / @fmacs
        per_weight = math.ceil(br / simd)
    else:
        # fc1 has no dX: dW is br one-element multiply-adds per weight, plus the cycle its
        # partial sum takes on the datapath when its block streams down the column.
        per_weight = br + 1
    t_compute = wavelets * 1 + w * per_weight  # one receive per wavelet
    return t_stream, t_compute


def edge(stream_bytes, t_compute):
    """The pass when its stream is longer than the edge holds: the head (EDGE bytes, a share
    EDGE/bytes of every column's wavelets) is at the edge when the pass starts; the tail leaves
    MemoryX a round trip later and then arrives at MemoryX's rate, while the busiest column still
    has the rest of its compute to do. 0 when the whole stream fits at the edge."""
    if stream_bytes <= EDGE:
        return 0
    head = EDGE / stream_bytes
    return ROUND_TRIP + max((stream_bytes - EDGE) / MX_RATE, (1 - head) * t_compute)


def row(batch, precision, sparsity, f, backward):
    t_stream, t_compute = model(batch, precision, sparsity, backward)
    m = max(t_stream, t_compute)
    t_edge = edge(f["memoryx_bytes"], t_compute)
    phase = f["stream_bound_cycles"] + f["compute_bound_cycles"]
    bound = "stream" if f["compute_bound_cycles"] < 0.1 * f["stream_bound_cycles"] else "compute"
    return (f"| {batch} | {math.ceil(batch / P)} | {precision} | {sparsity} | {'bwd' if backward else 'fwd'} | {f['cycles']} | "
            f"{phase} | {f['tail_cycles']} | {t_stream:.0f} | {t_compute:.0f} | {m:.0f} | {phase / m:.2f} | "
            f"{t_edge:.0f} | {phase / max(m, t_edge):.2f} | {bound} |")


print("| batch | rows/PE | precision | sparsity | pass | fc1 cycles | stream phase | tail | t_stream | t_compute | max(model) | measured/model | t_edge | measured/max(model, t_edge) | bound |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
settings = [(b, p, 0) for p in ("fp32", "mixed") for b in (8, 16, 32, 64)] + [(b, "mixed", s) for s in (0.5, 0.9) for b in (8, 32)]
for batch, precision, sparsity in settings:
    r = run(batch, precision, sparsity)
    layer = r["layers"][0]
    for backward in (False, True):
        print(row(batch, precision, sparsity, layer["backward" if backward else "forward"], backward))
