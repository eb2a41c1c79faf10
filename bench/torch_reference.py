#!/usr/bin/env python3
"""Fixed during a session (the performance harness): DiT in PyTorch, measured beside the engine.

A DiT written for this project (the architecture of the original DiT: adaLN-Zero blocks,
learned sigma, upstream's classifier-free guidance on three channels, its respaced linear
schedule and DDPM sampler). It does, in order:

1. Passes the reference vectors itself (tests/data/dit_tiny_{a,b}): forward and guided
   forward in float64 (bound 1e-6; 1e-12 on the t = 0 row) and float32 (bound 1e-5), and the
   10-step DDPM trajectory with the recorded noise (float64, bound 1e-6), so that two wrong implementations cannot
   agree with each other. This step needs only a CPU.
2. On a GPU: writes seeded random DiT-XL/2 weights as a safetensors checkpoint in the original
   layout, has the engine run one forward pass on the same weights and inputs
   (`bench_forward --weights ... --forward-inputs ... --forward-output ...`, fp16), and checks
   the engine against PyTorch float32 (TF32 off): normwise relative error at most 1e-2.
3. Times PyTorch eager, torch.compile, and torch.compile with CUDA graphs
   (mode="reduce-overhead") in fp16 for DiT-XL/2 at 256 (batch 2 and 64) and 512 (batch 2),
   plus one whole image (250 DDPM steps, guidance 4.0, no VAE decode), each iteration on fresh
   inputs, and prints one table: the engine (read from its benchmark JSON) against each mode.
   Mode `floor` is the library floor of a forward pass (library_floor): its matrix products
   and attention calls alone, graph-captured; the engine's speed targets are stated against it.

Usage:
  bench/torch_reference.py --check-only                       # step 1 (CPU is enough)
  bench/torch_reference.py --engine-build build/a5500 \\
      --engine-json OUT/bench_forward.json --engine-json OUT/bench_e2e.json --out OUT/torch.json
bench/side_by_side.sh runs the whole comparison in one command.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import save_file
from torch import nn

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"

# Bounds (normwise relative error ||a - b|| / ||b||) and the workloads of the table.
# The float32 sinusoid leaves about 1e-7 between machines whose float32 exp/cos/sin round
# differently (the vectors' generator used PyTorch's); rows at t = 0, where the sinusoid is
# exact, must agree to float64 precision.
VECTOR_BOUND_FLOAT64 = 1e-6
VECTOR_BOUND_T0_FLOAT64 = 1e-12
VECTOR_BOUND_FLOAT32 = 1e-5
TRAJECTORY_BOUND_FLOAT64 = 1e-6
ENGINE_FP16_BOUND = 1e-2
FORWARD_WORKLOADS = [(256, 2), (256, 64), (512, 2)]  # (image size, batch)
IMAGE_STEPS = 250
IMAGE_CFG_SCALE = 4.0
WEIGHTS_SEED = 20261129
WEIGHTS_STD = 0.02
XL2 = dict(patch_size=2, hidden_size=1152, depth=28, num_heads=16, num_classes=1000)


# ---------------------------------------------------------------------------------------------
# The model


def timestep_sinusoid(t: torch.Tensor, dim: int = 256, max_period: float = 10000.0) -> torch.Tensor:
    """[cos(t f_i), sin(t f_i)], cosine first. As upstream, frequencies and arguments are float32;
    exp, cos and sin are taken in float64 and rounded once, so the values do not depend on the
    vector math library of the machine (the engine's CPU reference does the same)."""
    half = dim // 2
    exponents = (-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device)) / half
    frequencies = torch.exp(exponents.double()).float()
    angles = (t.to(torch.float32)[:, None] * frequencies[None, :]).double()
    return torch.cat([torch.cos(angles), torch.sin(angles)], dim=1).float()


def sincos_pos_embed(hidden: int, grid: int) -> np.ndarray:
    """The fixed [1, T, D] table: first half encodes the column, second half the row."""
    def encode(positions: np.ndarray, width: int) -> np.ndarray:
        omega = 1.0 / 10000 ** (np.arange(width // 2, dtype=np.float64) / (width / 2.0))
        angles = positions.reshape(-1)[:, None] * omega[None, :]
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)

    rows, cols = np.meshgrid(np.arange(grid, dtype=np.float64), np.arange(grid, dtype=np.float64),
                             indexing="ij")
    table = np.concatenate([encode(cols, hidden // 2), encode(rows, hidden // 2)], axis=1)
    return table.astype(np.float32)[None]


class PatchEmbed(nn.Module):
    def __init__(self, channels: int, hidden: int, patch: int):
        super().__init__()
        self.proj = nn.Conv2d(channels, hidden, kernel_size=patch, stride=patch)

    def forward(self, x):  # [B, C, S, S] -> [B, T, D]
        return self.proj(x).flatten(2).transpose(1, 2)


class TimestepEmbedder(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(256, hidden), nn.SiLU(), nn.Linear(hidden, hidden))

    def forward(self, t):
        return self.mlp(timestep_sinusoid(t).to(self.mlp[0].weight.dtype))


class LabelEmbedder(nn.Module):
    def __init__(self, classes: int, hidden: int):
        super().__init__()
        self.embedding_table = nn.Embedding(classes + 1, hidden)  # last row: the null class

    def forward(self, y):
        return self.embedding_table(y)


class Attention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)

    def forward(self, x):  # [B, T, D]
        batch, tokens, hidden = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.heads, hidden // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each [B, H, T, hd]
        if hasattr(F, "scaled_dot_product_attention"):
            out = F.scaled_dot_product_attention(q, k, v)
        else:  # torch < 2.0 (Debian 12's 1.13): the same product, written out
            out = torch.softmax(q @ k.transpose(-2, -1) * (q.shape[-1] ** -0.5), dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, tokens, hidden))


class Mlp(nn.Module):
    def __init__(self, hidden: int, inner: int):
        super().__init__()
        self.fc1 = nn.Linear(hidden, inner)
        self.fc2 = nn.Linear(inner, hidden)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))


def modulate(x, shift, scale):
    normed = F.layer_norm(x, (x.shape[-1],), eps=1e-6)
    return normed * (1 + scale[:, None, :]) + shift[:, None, :]


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int, mlp_ratio: float):
        super().__init__()
        self.attn = Attention(hidden, heads)
        self.mlp = Mlp(hidden, int(hidden * mlp_ratio))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 6 * hidden))

    def forward(self, x, c):
        shift_a, scale_a, gate_a, shift_m, scale_m, gate_m = self.adaLN_modulation(c).chunk(6, dim=1)
        x = x + gate_a[:, None, :] * self.attn(modulate(x, shift_a, scale_a))
        return x + gate_m[:, None, :] * self.mlp(modulate(x, shift_m, scale_m))


class FinalLayer(nn.Module):
    def __init__(self, hidden: int, patch: int, out_channels: int):
        super().__init__()
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(hidden, 2 * hidden))
        self.linear = nn.Linear(hidden, patch * patch * out_channels)

    def forward(self, x, c):
        shift, scale = self.adaLN_modulation(c).chunk(2, dim=1)
        return self.linear(modulate(x, shift, scale))


class DiT(nn.Module):
    def __init__(self, input_size: int, patch_size: int, hidden_size: int, depth: int,
                 num_heads: int, num_classes: int, in_channels: int = 4, mlp_ratio: float = 4.0,
                 learn_sigma: bool = True, **_ignored):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = 2 * in_channels if learn_sigma else in_channels
        self.patch = patch_size
        self.grid = input_size // patch_size
        self.x_embedder = PatchEmbed(in_channels, hidden_size, patch_size)
        self.t_embedder = TimestepEmbedder(hidden_size)
        self.y_embedder = LabelEmbedder(num_classes, hidden_size)
        self.pos_embed = nn.Parameter(torch.from_numpy(sincos_pos_embed(hidden_size, self.grid)),
                                      requires_grad=False)
        self.blocks = nn.ModuleList(Block(hidden_size, num_heads, mlp_ratio) for _ in range(depth))
        self.final_layer = FinalLayer(hidden_size, patch_size, self.out_channels)

    def unpatchify(self, tokens):  # [B, T, p*p*C] -> [B, C, g*p, g*p]
        batch, g, p, c = tokens.shape[0], self.grid, self.patch, self.out_channels
        x = tokens.reshape(batch, g, g, p, p, c)
        return torch.einsum("nhwpqc->nchpwq", x).reshape(batch, c, g * p, g * p)

    def forward(self, x, t, y):
        h = self.x_embedder(x) + self.pos_embed
        c = self.t_embedder(t) + self.y_embedder(y)
        for block in self.blocks:
            h = block(h, c)
        return self.unpatchify(self.final_layer(h, c))


def guided(forward, x, t, y, scale: float, guided_channels: int = 3):
    """Upstream forward_with_cfg: the first half of x runs twice (real labels, then null)."""
    half = x[: len(x) // 2]
    out = forward(torch.cat([half, half]), t, y)
    eps, rest = out[:, :guided_channels], out[:, guided_channels:]
    cond, uncond = torch.split(eps, len(eps) // 2, dim=0)
    half_eps = uncond + scale * (cond - uncond)
    return torch.cat([torch.cat([half_eps, half_eps]), rest], dim=1)


# ---------------------------------------------------------------------------------------------
# Schedule and DDPM sampler (upstream's respaced linear schedule, learned-range variance)


class Schedule:
    def __init__(self, steps: int, base_steps: int = 1000):
        base_betas = np.linspace(1e-4, 0.02, base_steps, dtype=np.float64)
        base_cumprod = np.cumprod(1.0 - base_betas)
        stride = (base_steps - 1) / (steps - 1) if steps > 1 else 1
        kept = {round(i * stride) for i in range(steps)}  # Python's round: half to even
        betas, timestep_map, previous = [], [], 1.0
        for i, cumprod in enumerate(base_cumprod):
            if i in kept:
                betas.append(1 - cumprod / previous)
                previous = cumprod
                timestep_map.append(i)
        self.betas = np.array(betas)
        self.timestep_map = np.array(timestep_map, dtype=np.int64)
        alphas_cumprod = np.cumprod(1.0 - self.betas)
        alphas_cumprod_prev = np.append(1.0, alphas_cumprod[:-1])
        posterior_variance = self.betas * (1 - alphas_cumprod_prev) / (1 - alphas_cumprod)
        self.posterior_log_variance_clipped = np.log(
            np.append(posterior_variance[1], posterior_variance[1:]))
        self.coef1 = self.betas * np.sqrt(alphas_cumprod_prev) / (1 - alphas_cumprod)
        self.coef2 = (1 - alphas_cumprod_prev) * np.sqrt(1 - self.betas) / (1 - alphas_cumprod)
        self.sqrt_recip = np.sqrt(1 / alphas_cumprod)
        self.sqrt_recipm1 = np.sqrt(1 / alphas_cumprod - 1)
        self.log_betas = np.log(self.betas)

    def coefficient(self, table: np.ndarray, i: int, like: torch.Tensor) -> torch.Tensor:
        # Upstream reads every coefficient as a float32 value.
        return torch.tensor(np.float32(table[i]), dtype=torch.float32).to(like.device, like.dtype)


def ddpm_sample(forward, schedule: Schedule, x, y, scale: float, noise_for_step):
    """Runs every step (highest t first) on the doubled batch x [2B, C, S, S]."""
    channels = x.shape[1]
    for step, i in enumerate(reversed(range(len(schedule.betas)))):
        t = torch.full((len(x),), int(schedule.timestep_map[i]), dtype=torch.int64, device=x.device)
        out = guided(forward, x, t, y, scale)
        eps, v = out[:, :channels], out[:, channels:]
        k = lambda table: schedule.coefficient(table, i, x)  # noqa: E731
        x0 = k(schedule.sqrt_recip) * x - k(schedule.sqrt_recipm1) * eps
        mean = k(schedule.coef1) * x0 + k(schedule.coef2) * x
        fraction = (v + 1) / 2
        log_variance = fraction * k(schedule.log_betas) + (1 - fraction) * k(
            schedule.posterior_log_variance_clipped)
        x = mean if i == 0 else mean + torch.exp(0.5 * log_variance) * noise_for_step(step)
    return x


# ---------------------------------------------------------------------------------------------
# Step 1: the reference vectors


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double().cpu(), b.double().cpu()
    return float(torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b))


def load_tensors(path: pathlib.Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    with safe_open(str(path), framework="pt") as f:
        return {name: f.get_tensor(name) for name in f.keys()}, f.metadata() or {}


def check_reference_vectors() -> bool:
    ok = True
    for name in ("dit_tiny_a", "dit_tiny_b"):
        weights, metadata = load_tensors(DATA / f"{name}.weights.safetensors")
        vectors, _ = load_tensors(DATA / f"{name}.vectors.safetensors")
        config = json.loads(metadata["config"])
        for dtype, bound in ((torch.float64, VECTOR_BOUND_FLOAT64), (torch.float32, VECTOR_BOUND_FLOAT32)):
            model = DiT(**config).to(dtype).eval()
            model.load_state_dict({k: v.to(dtype) for k, v in weights.items()}, strict=True)
            with torch.no_grad():
                forward = model(vectors["forward.x"].to(dtype), vectors["forward.t"], vectors["forward.y"])
                cfg = guided(model, vectors["cfg.x"].to(dtype), vectors["cfg.t"], vectors["cfg.y"],
                             float(vectors["cfg.scale"][0]))
            checks = [("forward", forward, vectors["forward.out"], bound),
                      ("cfg", cfg, vectors["cfg.out"], bound)]
            if dtype == torch.float64:
                t0 = int((vectors["forward.t"] == 0).nonzero()[0])
                checks.append(("forward t=0", forward[t0], vectors["forward.out"][t0], VECTOR_BOUND_T0_FLOAT64))
            for label, out, reference, limit in checks:
                error = relative_error(out, reference)
                passed = error <= limit
                ok &= passed
                print(f"  {name} {label:<12} {str(dtype).replace('torch.', ''):<8} "
                      f"rel err {error:.2e} (bound {limit:.0e}) {'ok' if passed else 'FAIL'}")
        model = DiT(**config).double().eval()
        model.load_state_dict({k: v.double() for k, v in weights.items()}, strict=True)
        steps = vectors["ddpm.noise"].shape[0]
        schedule = Schedule(steps)
        map_ok = np.array_equal(schedule.timestep_map, vectors["ddpm.timestep_map"].numpy())
        with torch.no_grad():
            final = ddpm_sample(model, schedule, vectors["ddpm.xT"].double(), vectors["ddpm.y"],
                                IMAGE_CFG_SCALE, lambda step: vectors["ddpm.noise"][step].double())
        error = relative_error(final, vectors["ddpm.trajectory"][-1])
        passed = map_ok and error <= TRAJECTORY_BOUND_FLOAT64
        ok &= passed
        print(f"  {name} ddpm{steps:<8} float64  rel err {error:.2e} (bound "
              f"{TRAJECTORY_BOUND_FLOAT64:.0e}), timestep map {'equal' if map_ok else 'DIFFERS'} "
              f"{'ok' if passed else 'FAIL'}")
    return ok


# ---------------------------------------------------------------------------------------------
# Step 2: the same checkpoint and inputs through the engine


def xl2(image_size: int) -> dict:
    return dict(XL2, input_size=image_size // 8)


def random_xl2_weights(device: str) -> dict[str, torch.Tensor]:
    """Seeded N(0, 0.02) for every parameter (adaLN and final layer included), sin-cos pos_embed."""
    with torch.device("meta"):  # shapes only: no memory, no initialisation
        shapes = {name: p.shape for name, p in DiT(**xl2(256)).state_dict().items()}
    generator = torch.Generator(device=device).manual_seed(WEIGHTS_SEED)
    weights = {}
    for name, shape in shapes.items():
        if name == "pos_embed":
            weights[name] = torch.from_numpy(sincos_pos_embed(XL2["hidden_size"], 256 // 8 // XL2["patch_size"]))
        else:
            weights[name] = torch.empty(shape, device=device).normal_(0.0, WEIGHTS_STD, generator=generator).cpu()
    return weights


def build_model(weights: dict[str, torch.Tensor], image_size: int, dtype, device: str) -> DiT:
    config = xl2(image_size)
    with torch.device("meta"):
        model = DiT(**config)
    state = dict(weights)
    # the table of this image size, as the engine builds it
    state["pos_embed"] = torch.from_numpy(sincos_pos_embed(config["hidden_size"], config["input_size"] // config["patch_size"]))
    model.load_state_dict(state, strict=True, assign=True)
    return model.to(device=device, dtype=dtype).eval()


def check_engine(build: pathlib.Path, weights_path: pathlib.Path, weights, work: pathlib.Path,
                 device: str) -> dict:
    generator = torch.Generator().manual_seed(7)
    x = torch.randn((2, 4, 32, 32), generator=generator)
    t = torch.tensor([999, 421], dtype=torch.int64)
    y = torch.tensor([207, 1000], dtype=torch.int64)
    inputs = work / "forward_inputs.safetensors"
    output = work / "forward_output.safetensors"
    save_file({"x": x, "t": t, "y": y}, str(inputs))
    command = [str(build / "bench" / "bench_forward"), f"--weights={weights_path}",
               f"--forward-inputs={inputs}", f"--forward-output={output}", "--precision=fp16"]
    print("  " + " ".join(command))
    subprocess.run(command, check=True)
    engine, _ = load_tensors(output)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with torch.no_grad():
        reference = build_model(weights, 256, torch.float32, device)(x.to(device), t.to(device), y.to(device))
        torch_fp16 = build_model(weights, 256, torch.float16, device)(
            x.to(device, torch.float16), t.to(device), y.to(device))
    engine_error = relative_error(engine["out"], reference)
    torch_error = relative_error(torch_fp16, reference)
    passed = engine_error <= ENGINE_FP16_BOUND
    print(f"  engine fp16 vs PyTorch fp32: rel err {engine_error:.2e} (bound {ENGINE_FP16_BOUND:.0e}) "
          f"{'ok' if passed else 'FAIL'}; PyTorch fp16 vs fp32: {torch_error:.2e}")
    return {"engine_fp16_vs_torch_fp32": engine_error, "torch_fp16_vs_torch_fp32": torch_error,
            "bound": ENGINE_FP16_BOUND, "passed": passed}


# ---------------------------------------------------------------------------------------------
# Step 3: timing


def time_forward(forward, batch: int, image_size: int, iterations: int, mark_step: bool) -> float:
    """Median milliseconds of one forward pass over `iterations` fresh inputs (CUDA events)."""
    device, latent = "cuda", image_size // 8
    pool = [(torch.randn((batch, 4, latent, latent), device=device, dtype=torch.float16),
             torch.randint(0, 1000, (batch,), device=device),
             torch.randint(0, 1001, (batch,), device=device)) for _ in range(4)]
    times = []
    with torch.no_grad():
        for i in range(iterations + 3):  # the first three calls warm up (and compile)
            x, t, y = pool[i % len(pool)]
            if mark_step:
                torch.compiler.cudagraph_mark_step_begin()
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            forward(x, t, y)
            stop.record()
            stop.synchronize()
            if i >= 3:
                times.append(start.elapsed_time(stop))
    return statistics.median(times)


def time_image(forward, image_size: int, runs: int, mark_step: bool) -> float:
    """Median milliseconds of one guided 250-step DDPM image (latents only, no decode)."""
    schedule = Schedule(IMAGE_STEPS)
    latent = image_size // 8

    def step_forward(x, t, y):
        if mark_step:
            torch.compiler.cudagraph_mark_step_begin()
        return forward(x, t, y)

    times = []
    with torch.no_grad():
        for run in range(runs + 1):  # the first run warms up
            x = torch.randn((1, 4, latent, latent), device="cuda", dtype=torch.float16)
            x = torch.cat([x, x])
            y = torch.tensor([run % 1000, 1000], device="cuda")
            torch.cuda.synchronize()
            start = time.perf_counter()
            ddpm_sample(step_forward, schedule, x, y, IMAGE_CFG_SCALE, lambda step: torch.randn_like(x))
            torch.cuda.synchronize()
            if run > 0:
                times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def library_floor(model: DiT, image_size: int, batch: int, replays: int = 50) -> float:
    """Median milliseconds of the library floor of one fp16 forward pass: every matrix product
    and attention call of the pass and nothing else, each on the libraries PyTorch calls
    (cuBLAS for the linear layers, cuDNN for the patch embedding's convolution, the fused
    scaled_dot_product_attention), captured in one CUDA Graph and replayed. LayerNorms,
    modulations, gated residuals, GELU, SiLU, the embeddings' sinusoid and the layout copies
    between them are left out: inputs of each product are preallocated tensors of its shape
    (their values do not change the time), so nothing but the products runs. An engine built on
    these libraries cannot go below it without faster products. `model` is the fp16 DiT of
    build_model at this image size: its parameters are the products' weights."""
    config = xl2(image_size)
    hidden, heads, depth = config["hidden_size"], config["num_heads"], config["depth"]
    tokens = (config["input_size"] // config["patch_size"]) ** 2
    device, dtype = "cuda", torch.float16
    w = model.state_dict()
    generator = torch.Generator(device=device).manual_seed(11)

    def rand(*shape):
        return torch.randn(shape, device=device, dtype=dtype, generator=generator)

    latents = rand(batch, 4, config["input_size"], config["input_size"])
    frequencies, c = rand(batch, 256), rand(batch, hidden)
    normed, attended, activated = rand(batch, tokens, hidden), rand(batch, tokens, hidden), rand(batch, tokens, 4 * hidden)

    def products():
        F.conv2d(latents, w["x_embedder.proj.weight"], w["x_embedder.proj.bias"], stride=config["patch_size"])
        F.linear(F.linear(frequencies, w["t_embedder.mlp.0.weight"], w["t_embedder.mlp.0.bias"]),
                 w["t_embedder.mlp.2.weight"], w["t_embedder.mlp.2.bias"])
        for i in range(depth):
            b = f"blocks.{i}."
            F.linear(c, w[b + "adaLN_modulation.1.weight"], w[b + "adaLN_modulation.1.bias"])
            qkv = F.linear(normed, w[b + "attn.qkv.weight"], w[b + "attn.qkv.bias"])
            q, k, v = qkv.reshape(batch, tokens, 3, heads, hidden // heads).permute(2, 0, 3, 1, 4).unbind(0)
            F.scaled_dot_product_attention(q, k, v)
            F.linear(attended, w[b + "attn.proj.weight"], w[b + "attn.proj.bias"])
            F.linear(normed, w[b + "mlp.fc1.weight"], w[b + "mlp.fc1.bias"])
            F.linear(activated, w[b + "mlp.fc2.weight"], w[b + "mlp.fc2.bias"])
        F.linear(c, w["final_layer.adaLN_modulation.1.weight"], w["final_layer.adaLN_modulation.1.bias"])
        F.linear(normed, w["final_layer.linear.weight"], w["final_layer.linear.bias"])

    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # library handles, algorithm choices, the attention backend
                products()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            products()
        for _ in range(5):
            graph.replay()
        times = []
        for _ in range(replays):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
    return statistics.median(times)


def measure_torch(weights, modes: list[str], image_runs: int) -> dict:
    import torch._dynamo

    torch._dynamo.config.cache_size_limit = 32
    results = {}
    models = {size: build_model(weights, size, torch.float16, "cuda") for size in {s for s, _ in FORWARD_WORKLOADS}}
    for mode in modes:
        if mode == "floor":  # the libraries' products alone (library_floor); no whole image
            for size, batch in FORWARD_WORKLOADS:
                ms = library_floor(models[size], size, batch)
                results[f"forward/{size}/batch:{batch}/floor"] = ms
                print(f"  {mode:<15} forward {size} batch {batch:<3} {ms:9.3f} ms", flush=True)
            continue
        torch._dynamo.reset()
        mark_step = mode == "compile+graphs"
        compiled = {}
        for size, model in models.items():
            if mode == "eager":
                compiled[size] = model
            elif mode == "compile":
                compiled[size] = torch.compile(model, dynamic=False)
            else:
                compiled[size] = torch.compile(model, mode="reduce-overhead", dynamic=False)
        for size, batch in FORWARD_WORKLOADS:
            started = time.perf_counter()
            ms = time_forward(compiled[size], batch, size, 30 if batch <= 8 else 10, mark_step)
            results[f"forward/{size}/batch:{batch}/{mode}"] = ms
            print(f"  {mode:<15} forward {size} batch {batch:<3} {ms:9.3f} ms "
                  f"({time.perf_counter() - started:.0f} s with warm-up)", flush=True)
        ms = time_image(compiled[256], 256, image_runs, mark_step)
        results[f"image/256/{mode}"] = ms
        print(f"  {mode:<15} one image 256   {ms:9.1f} ms", flush=True)
    return results


# ---------------------------------------------------------------------------------------------
# The table


def engine_figures(paths: list[pathlib.Path]) -> dict[str, float]:
    """Milliseconds per workload from Google Benchmark JSON: the median aggregate when the run
    had repetitions, else the mean over the runs of that name."""
    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
    runs: dict[str, list[float]] = {}
    medians: dict[str, float] = {}
    for path in paths:
        for entry in json.loads(path.read_text())["benchmarks"]:
            if entry.get("error_occurred"):
                continue
            name = entry.get("run_name", entry["name"])
            ms = entry["real_time"] * scale[entry["time_unit"]]
            if entry.get("run_type") == "aggregate":
                if entry.get("aggregate_name") == "median":
                    medians[name] = ms
            else:
                runs.setdefault(name, []).append(ms)
    figures = {name: statistics.mean(values) for name, values in runs.items()}
    figures.update(medians)
    keyed = {}
    for size, batch in FORWARD_WORKLOADS:
        for name, ms in figures.items():
            if name.startswith(f"BM_Forward/image:{size}/batch:{batch}/"):
                keyed[f"forward/{size}/batch:{batch}"] = ms
    for name, ms in figures.items():
        if name.startswith("BM_E2E_SampleLatents/256/"):
            keyed["image/256"] = ms
    return keyed


def print_table(engine: dict[str, float], torch_ms: dict[str, float], modes: list[str], gpu: str) -> None:
    rows = [(f"forward {size} batch {batch}", f"forward/{size}/batch:{batch}") for size, batch in FORWARD_WORKLOADS]
    rows.append((f"one image 256, {IMAGE_STEPS} DDPM steps, cfg {IMAGE_CFG_SCALE:g} (no decode)", "image/256"))
    header = ["workload (DiT-XL/2, fp16)", "engine ms"]
    for mode in modes:
        header += [f"{mode} ms", f"{mode}/engine"]
    print(f"\nDiT-XL/2 side by side on {gpu} (ratio > 1: the engine is faster)\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(" --- " for _ in header) + "|")
    for label, key in rows:
        engine_ms = engine.get(key)
        cells = [label, f"{engine_ms:.3f}" if engine_ms is not None else "n/a"]
        for mode in modes:
            torch_value = torch_ms.get(f"{key}/{mode}")
            cells.append(f"{torch_value:.3f}" if torch_value is not None else "n/a")
            cells.append(f"{torch_value / engine_ms:.2f}x" if torch_value and engine_ms else "n/a")
        print("| " + " | ".join(cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check-only", action="store_true", help="only step 1, the reference vectors")
    parser.add_argument("--engine-build", type=pathlib.Path, help="build directory with bench/bench_forward")
    parser.add_argument("--engine-json", type=pathlib.Path, action="append", default=[],
                        help="engine benchmark JSON (bench_forward, bench_e2e); repeatable")
    parser.add_argument("--modes", default="eager,compile,compile+graphs,floor",
                        help="PyTorch modes to time, comma-separated (eager, compile, compile+graphs, floor)")
    parser.add_argument("--image-runs", type=int, default=2, help="timed whole-image runs per mode")
    parser.add_argument("--work-dir", type=pathlib.Path, help="where the checkpoint and inputs go")
    parser.add_argument("--out", type=pathlib.Path, help="write every figure as JSON here")
    args = parser.parse_args()

    print("reference vectors (tests/data):")
    if not check_reference_vectors():
        print("FAIL: this PyTorch DiT does not reproduce the reference vectors; its timings mean nothing")
        return 1
    if args.check_only:
        return 0
    if not torch.cuda.is_available():
        print("FAIL: no CUDA device for the timing steps (use --check-only on a CPU)")
        return 2

    modes = [m for m in args.modes.split(",") if m]
    gpu = torch.cuda.get_device_name()
    report = {"gpu": gpu, "torch": torch.__version__, "modes": modes}
    with tempfile.TemporaryDirectory(dir=args.work_dir) as scratch:
        work = pathlib.Path(scratch)
        print("random DiT-XL/2 weights:")
        weights = random_xl2_weights("cuda")
        weights_path = work / "dit_xl2_random.safetensors"
        save_file(weights, str(weights_path), metadata={
            "config": json.dumps(xl2(256)), "seed": str(WEIGHTS_SEED), "weights_std": str(WEIGHTS_STD)})
        print(f"  {weights_path} ({weights_path.stat().st_size / 2**30:.2f} GiB)")
        if args.engine_build:
            print("engine agreement (same checkpoint, same inputs):")
            report["agreement"] = check_engine(args.engine_build, weights_path, weights, work, "cuda")
        print("PyTorch timing (fp16, fresh inputs each iteration):")
        report["torch_ms"] = measure_torch(weights, modes, args.image_runs)
    engine = engine_figures(args.engine_json)
    report["engine_ms"] = engine
    print_table(engine, report["torch_ms"], modes, gpu)
    if "floor" in modes:  # the engine's time as a fraction of the libraries' products alone
        report["engine_over_floor"] = {}
        for size, batch in FORWARD_WORKLOADS:
            key = f"forward/{size}/batch:{batch}"
            floor, mine = report["torch_ms"].get(f"{key}/floor"), engine.get(key)
            if floor and mine:
                report["engine_over_floor"][key] = mine / floor
                print(f"engine / floor, {key}: {mine / floor:.3f}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    agreement = report.get("agreement")
    return 1 if agreement is not None and not agreement["passed"] else 0


if __name__ == "__main__":
    sys.exit(main())
