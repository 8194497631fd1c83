#!/usr/bin/env python3
"""Compares the gate kernel with eager PyTorch on random inputs (needs torch + a GPU).

    ci/torch_gate_compare.py BUILD_DIR [T W SEED]

Runs BUILD_DIR/tools/hy4-gate-dump, then computes `attn * torch.sigmoid(gate)` in
bf16 on the GPU and reports the rate of bitwise differences and their size, and how
many of them come from the sigmoid alone (PyTorch's fp32 sigmoid and sigmoid_f32
rounding to different bf16 values)."""
import os, subprocess, sys, tempfile
import numpy as np
import torch

build = sys.argv[1]
T, W, seed = (int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (4096, 2048, 7)
with tempfile.TemporaryDirectory() as d:
    subprocess.run([os.path.join(build, "tools", "hy4-gate-dump"), d, str(T), str(W), str(seed)], check=True)
    load = lambda n: torch.from_numpy(np.fromfile(os.path.join(d, n), dtype=np.int16).reshape(T, W))
    attn, gate, out, sig = load("attn.bin"), load("gate.bin"), load("out.bin"), load("sigmoid.bin")
a = attn.view(torch.bfloat16).cuda()
g = gate.view(torch.bfloat16).cuda()
eager = (a * torch.sigmoid(g)).cpu().view(torch.int16)
# sigmoid.bin is bf16(sigmoid_f32(gate)), the kernel's rounded sigmoid (host-computed;
# the exhaustive device_bits test proves host and device bits equal).
sig_differs = torch.sigmoid(g).cpu().view(torch.int16) != sig
diff = eager != out
n = diff.numel()
nd = int(diff.sum())
to_int = lambda x: x.to(torch.int32) & 0xFFFF
ordered = lambda x: torch.where(x >= 0x8000, -(x & 0x7FFF), x)
ulp = (ordered(to_int(eager)) - ordered(to_int(out))).abs()
print(f"gate vs eager PyTorch ({torch.cuda.get_device_name()}): T={T} W={W} seed={seed}")
print(f"  elements           {n}")
print(f"  bitwise different  {nd}  ({100.0 * nd / n:.4f} %)")
print(f"  max difference     {int(ulp.max())} bf16 ulp")
print(f"  bf16 sigmoid differs from torch.sigmoid on {int(sig_differs.sum())} elements "
      f"({100.0 * int(sig_differs.sum()) / n:.4f} %); output differences where it does not: "
      f"{int((diff & ~sig_differs).sum())}")
for k in range(1, int(ulp.max()) + 1):
    print(f"  {k} ulp apart        {int((ulp == k).sum())}")
# Rate at which a fused kernel that skips the bf16 rounding of the sigmoid would differ:
fused = (a.float() * torch.sigmoid(g.float())).to(torch.bfloat16).cpu().view(torch.int16)
nf = int((fused != eager).sum())
print(f"  (a fused kernel without the bf16 rounding of s differs from eager on {100.0 * nf / n:.2f} %)")
sys.exit(0 if int(ulp.max()) <= 1 and int((diff & ~sig_differs).sum()) == 0 else 1)
