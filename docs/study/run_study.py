#!/usr/bin/env python3
"""Layer cycles vs batch size and vs sparsity, against t_layer = max(t_compute, t_stream).

Runs one training step of 784 -> 256 -> 10 on a 128 x 8 PE mesh for each setting and reads
fc1's forward pass from report.json. Usage: docs/study/run_study.py [path/to/wse]"""
import json, math, os, subprocess, sys, tempfile

wse = sys.argv[1] if len(sys.argv) > 1 else "build/release/wse"
Q, P, IN, OUT = 128, 8, 784, 256
IO_WAVELETS = 176.47 / 4  # per cycle, shared by the Q ingress ports
rate = min(1.0, IO_WAVELETS / Q)

def run(batch, sparsity):
    d = tempfile.mkdtemp(prefix="wse_study_")
    cfg = os.path.join(d, "cfg.yaml")
    enc = "sparse" if sparsity > 0 else "dense"
    with open(cfg, "w") as f:
        f.write(f"""machine: wse2
mesh: {{width: {Q}, height: {P}}}
kernel: fc_train
model: {{layers: [{IN}, {OUT}, 10]}}
data: {{train_samples: {batch}, eval_samples: 0}}
training: {{batch_size: {batch}, max_steps: 1}}
weights: {{encoding: {enc}}}
""" + (f"sparsity: {{sparsity: {sparsity}}}\n" if sparsity > 0 else ""))
    subprocess.run([wse, "run", cfg, "--threads", "2", "--out", d], check=True, stdout=subprocess.DEVNULL)
    return json.load(open(os.path.join(d, "report.json")))

print("| batch | rows/PE | sparsity | fc1 fwd cycles | stream phase | tail | t_stream | t_compute | max(model) | measured/model | bound |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for batch, sparsity in [(8, 0), (16, 0), (32, 0), (64, 0), (8, 0.5), (8, 0.9), (32, 0.5), (32, 0.9)]:
    r = run(batch, sparsity)
    f = r["layers"][0]["forward"]
    br = math.ceil(batch / P)
    # The busiest column's weights: its feature rows (784 split over 128 columns) x 256 outputs,
    # pruned by the sparsity level; the last column also streams the bias row, which stays dense.
    def nnz_col(c):
        rows = IN * (c + 1) // Q - IN * c // Q
        return rows * OUT * (1 - sparsity) + (OUT if c == Q - 1 else 0)
    nnz = max(nnz_col(c) for c in range(Q))
    t_stream = nnz / rate
    t_compute = nnz * (1 + br)  # one receive + ceil(br / 1) fp32 FMAC cycles per weight, on every PE of the column
    model = max(t_stream, t_compute)
    phase = f["stream_bound_cycles"] + f["compute_bound_cycles"]
    bound = "stream" if f["compute_bound_cycles"] < 0.1 * f["stream_bound_cycles"] else "compute"
    print(f"| {batch} | {br} | {sparsity} | {f['cycles']} | {phase} | {f['tail_cycles']} | {t_stream:.0f} | {t_compute:.0f} | {model:.0f} | {phase / model:.2f} | {bound} |")
