#!/usr/bin/env python3
"""An independent safetensors reader (standard library only): checks a checkpoint written by
wse follows the format - 8-byte little-endian header length, JSON header, F32 little-endian data
with offsets that tile the data section exactly - and prints each tensor's shape, the sum of its
numbers and how many NaN sentinels (pruned weights of a sparse run) it holds."""
import json, struct, sys

path = sys.argv[1]
blob = open(path, "rb").read()
(n,) = struct.unpack("<Q", blob[:8])
header = json.loads(blob[8:8 + n])
data = blob[8 + n:]
meta = header.pop("__metadata__", {})
assert all(isinstance(v, str) for v in meta.values()), "metadata values must be strings"
end = 0
for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
    assert t["dtype"] == "F32", name
    b, e = t["data_offsets"]
    assert b == end, f"{name}: offsets must be contiguous"
    count = 1
    for d in t["shape"]:
        count *= d
    assert e - b == 4 * count, f"{name}: size does not match shape"
    values = struct.unpack(f"<{count}f", data[b:e])
    nan = sum(1 for v in values if v != v)
    print(f"{name} {t['shape']} sum={sum(v for v in values if v == v):.6g} nan={nan}")
    end = e
assert end == len(data), "data section has trailing bytes"
print(f"ok: {len(header)} tensors, step {meta.get('step')}")
