#!/usr/bin/env python3
"""An outside oracle for the engine's checkpoints: one set of random DiT weights in both source
layouts, through the engine, against two other implementations.

The weights (seeded, every activation near unit size: random_weights) are written
  - in the original layout: torch.save of the facebookresearch/DiT state dict, converted by
    tools/convert_checkpoint.py into the engine's safetensors file;
  - in diffusers' layout: DiTTransformer2DModel loaded with them and save_pretrained
    (transformer/diffusion_pytorch_model.safetensors and config.json), which the engine reads as
    it is. Without diffusers installed (--diffusers off), the script writes that layout itself
    from its own name map (diffusers' scripts/convert_dit_to_diffusers.py, restated), so only the
    engine's loader is checked, not diffusers' forward.
The engine (dit-sample) then runs, for each layout and precision,
  - one forward pass of given x, t and y (`--forward-inputs`), and
  - one whole image: DDIM with eta 0 and guidance, whose trajectory depends only on the start
    latents, which dit-sample writes beside the result; the references start from the same ones.
The references, in float64: bench/torch_reference.py's DiT (itself checked against the original
code's vectors), and with diffusers installed its DiTTransformer2DModel forward. Diffusers'
timestep embedding differs from the original DiT's (Timesteps(downscale_freq_shift=1): the
frequencies exp(-ln(10000) i / (half - 1)) where DiT divides by half); the engine follows the
original, so diffusers is compared twice: as shipped (reported, not bounded) and with that shift
set to 0, which must agree like the other reference.

Bounds (normwise relative error ||engine - reference|| / ||reference||): fp32 1e-5, fp16 5e-3,
bf16 3e-2. Every figure goes to --out as JSON; the exit status is 1 when a bounded check fails,
2 on bad arguments or a step that could not run.

  bench/checkpoint_oracle.py --dit-sample build/a5500/model/cli/dit-sample --backend cuda \\
      --precisions fp32,fp16 --work-dir /tmp/oracle --out /tmp/oracle.json
  bench/checkpoint_oracle.py --dit-sample build/cpu/model/cli/dit-sample --model tiny \\
      --backend cpu --precisions fp32 --diffusers off --steps 10 --work-dir /tmp/o --out /tmp/o/oracle.json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import platform
import subprocess
import sys

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import torch_reference as reference  # noqa: E402  (the project's PyTorch DiT)

BOUNDS = {"fp32": 1e-5, "fp16": 5e-3, "bf16": 3e-2}
WEIGHTS_SEED = 20261202
CFG_SCALE = 4.0
# DiT-XL/2 (the released checkpoints) and a small DiT whose engine run takes seconds on a CPU.
MODELS = {
    "xl2": dict(patch_size=2, hidden_size=1152, depth=28, num_heads=16, num_classes=1000),
    "tiny": dict(patch_size=2, hidden_size=64, depth=2, num_heads=4, num_classes=10),
}
IMAGE_SIZES = {"xl2": 256, "tiny": 64}


class OracleError(Exception):
    """A step that could not run (exit status 2)."""


def model_config(name: str) -> dict:
    return dict(MODELS[name], input_size=IMAGE_SIZES[name] // 8)


def random_weights(config: dict, seed: int) -> dict[str, torch.Tensor]:
    """Seeded normal weights that keep every activation near unit size, so that each tensor moves
    the output: N(0, 1 / fan_in) for every matrix and convolution (adaLN and the final layer too,
    which DiT's own initialisation zeroes), N(0, 1) for the label table, N(0, 0.02) for biases,
    and the sin-cos table as pos_embed. With DiT's N(0, 0.02) everywhere a small model's attention
    scores are near zero, its softmax near uniform, and a swap of q and k changes the output by
    about 3e-6: below what an fp32 bound can see."""
    shapes = {name: tensor.shape for name, tensor in reference.DiT(**config).state_dict().items()}
    generator = torch.Generator().manual_seed(seed)
    weights = {}
    for name in sorted(shapes):
        shape = shapes[name]
        if name == "pos_embed":
            grid = config["input_size"] // config["patch_size"]
            weights[name] = torch.from_numpy(reference.sincos_pos_embed(config["hidden_size"], grid))
            continue
        if name == "y_embedder.embedding_table.weight":
            std = 1.0
        elif len(shape) >= 2:
            std = float(np.prod(shape[1:])) ** -0.5
        else:
            std = 0.02
        weights[name] = torch.empty(shape).normal_(0.0, std, generator=generator)
    return weights


# ---------------------------------------------------------------------------------------------
# Diffusers' layout


def to_diffusers(weights: dict[str, torch.Tensor], depth: int) -> dict[str, torch.Tensor]:
    """The original names onto DiTTransformer2DModel's: every block's AdaLayerNormZero holds its
    own copy of the timestep and label embedders; qkv is split into to_q, to_k and to_v; diffusers
    computes the position table itself (not saved)."""
    out: dict[str, torch.Tensor] = {}
    for name, tensor in weights.items():
        if name == "pos_embed":
            continue
        part, _, kind = name.rpartition(".")
        if part == "x_embedder.proj":
            out[f"pos_embed.proj.{kind}"] = tensor
        elif part in ("t_embedder.mlp.0", "t_embedder.mlp.2", "y_embedder.embedding_table"):
            target = {"t_embedder.mlp.0": "norm1.emb.timestep_embedder.linear_1",
                      "t_embedder.mlp.2": "norm1.emb.timestep_embedder.linear_2",
                      "y_embedder.embedding_table": "norm1.emb.class_embedder.embedding_table"}[part]
            for block in range(depth):
                out[f"transformer_blocks.{block}.{target}.{kind}"] = tensor.clone()
        elif part == "final_layer.adaLN_modulation.1":
            out[f"proj_out_1.{kind}"] = tensor
        elif part == "final_layer.linear":
            out[f"proj_out_2.{kind}"] = tensor
        elif part.startswith("blocks."):
            _, block, rest = part.split(".", 2)
            prefix = f"transformer_blocks.{block}"
            if rest == "attn.qkv":
                for letter, piece in zip("qkv", tensor.chunk(3, dim=0)):
                    out[f"{prefix}.attn1.to_{letter}.{kind}"] = piece.clone()
            else:
                target = {"attn.proj": "attn1.to_out.0", "mlp.fc1": "ff.net.0.proj", "mlp.fc2": "ff.net.2",
                          "adaLN_modulation.1": "norm1.linear"}.get(rest)
                if target is None:
                    raise OracleError(f"no diffusers name for {name}")
                out[f"{prefix}.{target}.{kind}"] = tensor
        else:
            raise OracleError(f"no diffusers name for {name}")
    return out


def diffusers_config(config: dict) -> dict:
    return {"_class_name": "DiTTransformer2DModel", "num_attention_heads": config["num_heads"],
            "attention_head_dim": config["hidden_size"] // config["num_heads"], "in_channels": 4,
            "out_channels": 8, "num_layers": config["depth"], "dropout": 0.0, "norm_num_groups": 32,
            "attention_bias": True, "sample_size": config["input_size"], "patch_size": config["patch_size"],
            "activation_fn": "gelu-approximate", "num_embeds_ada_norm": config["num_classes"],
            "upcast_attention": False, "norm_type": "ada_norm_zero", "norm_elementwise_affine": False,
            "norm_eps": 1e-5}


def diffusers_model(weights: dict[str, torch.Tensor], config: dict):
    """DiTTransformer2DModel holding `weights` (strict: every tensor of the model is given)."""
    from diffusers import DiTTransformer2DModel

    settings = {k: v for k, v in diffusers_config(config).items() if not k.startswith("_")}
    model = DiTTransformer2DModel(**settings)
    mapped = to_diffusers(weights, config["depth"])
    missing, unexpected = model.load_state_dict(mapped, strict=False)
    missing = [name for name in missing if not name.endswith("pos_embed")]
    if missing or unexpected:
        raise OracleError(f"diffusers model: missing {missing[:4]}, unexpected {unexpected[:4]}")
    return model.eval()


def write_diffusers_layout(weights, config: dict, folder: pathlib.Path, model) -> pathlib.Path:
    """Diffusers' own save_pretrained of `model`, or without diffusers (model None) this
    script's name map and config.json."""
    folder.mkdir(parents=True, exist_ok=True)
    if model is not None:
        model.save_pretrained(str(folder), safe_serialization=True)
    else:
        save_file({k: v.contiguous() for k, v in to_diffusers(weights, config["depth"]).items()},
                  str(folder / "diffusion_pytorch_model.safetensors"))
        (folder / "config.json").write_text(json.dumps(diffusers_config(config), indent=2) + "\n")
    path = folder / "diffusion_pytorch_model.safetensors"
    if not path.exists():
        raise OracleError(f"{folder}: save_pretrained wrote no diffusion_pytorch_model.safetensors")
    return path


def set_diffusers_frequency_shift(model, shift: float) -> int:
    """Sets Timesteps.downscale_freq_shift in every embedder; returns how many were set."""
    count = 0
    for module in model.modules():
        if type(module).__name__ == "Timesteps":
            module.downscale_freq_shift = shift
            count += 1
    return count


# ---------------------------------------------------------------------------------------------
# The engine


def run(command: list[str]) -> None:
    print("  " + " ".join(command), flush=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        raise OracleError(f"{command[0]} exited {done.returncode}:\n{done.stdout[-4000:]}")


def load(path: pathlib.Path) -> dict[str, torch.Tensor]:
    with safe_open(str(path), framework="pt") as f:
        return {name: f.get_tensor(name) for name in f.keys()}


def engine_forward(args, weights_file: pathlib.Path, inputs: pathlib.Path, precision: str,
                   out: pathlib.Path) -> torch.Tensor:
    run([str(args.dit_sample), f"--weights={weights_file}", f"--backend={args.backend}",
         f"--precision={precision}", f"--forward-inputs={inputs}", f"--forward-output={out}"])
    return load(out)["out"]


def engine_ddim(args, weights_file: pathlib.Path, labels: list[int], precision: str,
                out_dir: pathlib.Path) -> tuple[torch.Tensor, torch.Tensor]:
    command = [str(args.dit_sample), f"--weights={weights_file}", f"--backend={args.backend}",
               f"--precision={precision}", "--sampler=ddim", "--eta=0", f"--steps={args.steps}",
               f"--cfg-scale={CFG_SCALE}", "--vae=none", "--seed=11", f"--out={out_dir}"]
    command += [f"--class={label}" for label in labels]
    run(command)
    tensors = load(out_dir / "latents.safetensors")
    return tensors["latents"], tensors["initial_latents"]


# ---------------------------------------------------------------------------------------------
# The references' sampler: upstream's DDIM (eta 0) on the respaced schedule


def ddim(forward, schedule: reference.Schedule, start: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Upstream ddim_sample with eta 0 under guidance: eps from the guided output, x0 from it, eps
    recomputed from x0, x_{t-1} = sqrt(abar_prev) x0 + sqrt(1 - abar_prev) eps."""
    alphas_cumprod = np.cumprod(1.0 - schedule.betas)
    alphas_cumprod_prev = np.append(1.0, alphas_cumprod[:-1])
    x = torch.cat([start, start])
    y = torch.cat([labels, torch.full_like(labels, forward.null_class)])
    channels = start.shape[1]
    for i in reversed(range(len(schedule.betas))):
        t = torch.full((len(x),), int(schedule.timestep_map[i]), dtype=torch.int64, device=x.device)
        eps = reference.guided(forward, x, t, y, CFG_SCALE)[:, :channels]
        k = lambda table: schedule.coefficient(table, i, x)  # noqa: E731
        x0 = k(schedule.sqrt_recip) * x - k(schedule.sqrt_recipm1) * eps
        eps = (k(schedule.sqrt_recip) * x - x0) / k(schedule.sqrt_recipm1)
        x = x0 * k(np.sqrt(alphas_cumprod_prev)) + k(np.sqrt(1.0 - alphas_cumprod_prev)) * eps
    return x[: len(start)]


class Forward:
    """model(x, t, y) -> [B, 8, S, S] in float64 on `device`, for either reference."""

    def __init__(self, call, null_class: int, device: str):
        self.call, self.null_class, self.device = call, null_class, device

    def __call__(self, x, t, y):
        with torch.no_grad():
            return self.call(x.to(self.device, torch.float64), t.to(self.device), y.to(self.device)).cpu()


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double().cpu(), b.double().cpu()
    return float(torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b))


# ---------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dit-sample", type=pathlib.Path, required=True, help="the engine's dit-sample binary")
    parser.add_argument("--backend", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--model", choices=sorted(MODELS), default="xl2")
    parser.add_argument("--precisions", default="fp32,fp16", help="comma-separated: fp32, fp16, bf16")
    parser.add_argument("--steps", type=int, default=50, help="DDIM steps of the whole image")
    parser.add_argument("--diffusers", choices=("auto", "on", "off"), default="auto",
                        help="diffusers' own save_pretrained and forward (auto: when importable)")
    parser.add_argument("--device", default=None, help="the references' torch device (default: cuda if present)")
    parser.add_argument("--work-dir", type=pathlib.Path, required=True)
    parser.add_argument("--out", type=pathlib.Path, required=True, help="the JSON of every figure")
    args = parser.parse_args(argv)
    precisions = args.precisions.split(",")
    if any(p not in BOUNDS for p in precisions) or args.steps < 2:
        parser.error(f"--precisions from {sorted(BOUNDS)}, --steps at least 2")
    if not args.dit_sample.is_file():
        parser.error(f"--dit-sample {args.dit_sample} is not a file")
    with_diffusers = args.diffusers == "on"
    diffusers_version = None
    if args.diffusers != "off":
        try:
            import diffusers

            diffusers_version, with_diffusers = diffusers.__version__, True
        except ImportError as error:
            if args.diffusers == "on":
                print(f"checkpoint_oracle: --diffusers on, but: {error}", file=sys.stderr)
                return 2
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return oracle(args, precisions, with_diffusers, diffusers_version, device)
    except OracleError as error:
        print(f"checkpoint_oracle: {error}", file=sys.stderr)
        return 2


def oracle(args, precisions, with_diffusers: bool, diffusers_version, device: str) -> int:
    config = model_config(args.model)
    work = args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"weights: {args.model} {config}, seed {WEIGHTS_SEED}")
    weights = random_weights(config, WEIGHTS_SEED)

    original = work / "dit-original.pt"
    torch.save(weights, str(original))
    converted = work / "dit-converted.safetensors"
    run([sys.executable, str(ROOT / "tools" / "convert_checkpoint.py"), "--kind", "dit", "--input", str(original),
         "--output", str(converted)])
    model = diffusers_model(weights, config) if with_diffusers else None
    diffusers_file = write_diffusers_layout(weights, config, work / "diffusers" / "transformer", model)
    layouts = {"original-converted": converted, "diffusers": diffusers_file}

    references = {}
    dit = reference.DiT(**config).double().eval()
    dit.load_state_dict({k: v.double() for k, v in weights.items()}, strict=True)
    references["torch_reference"] = Forward(dit.to(device), config["num_classes"], device)
    if model is not None:
        model = model.double().to(device)

        def call_with_shift(shift: float):
            def call(x, t, y):
                if set_diffusers_frequency_shift(model, shift) == 0:
                    raise OracleError("diffusers model has no Timesteps module to set")
                return model(hidden_states=x, timestep=t, class_labels=y).sample
            return call

        references["diffusers"] = Forward(call_with_shift(1.0), config["num_classes"], device)
        references["diffusers-shift0"] = Forward(call_with_shift(0.0), config["num_classes"], device)
    del weights

    generator = torch.Generator().manual_seed(7)
    latent = config["input_size"]
    x = torch.randn((3, 4, latent, latent), generator=generator)
    t = torch.tensor([999, 421, 0], dtype=torch.int64)
    y = torch.tensor([1, config["num_classes"] - 1, config["num_classes"]], dtype=torch.int64)  # last: null
    inputs = work / "forward_inputs.safetensors"
    save_file({"x": x, "t": t, "y": y}, str(inputs))
    reference_forward = {name: ref(x, t, y) for name, ref in references.items()}

    checks = []

    def record(what: str, layout: str, precision: str, against: str, error: float, bounded: bool) -> None:
        bound = BOUNDS[precision] if bounded else None
        passed = None if bound is None else error <= bound
        checks.append({"what": what, "layout": layout, "precision": precision, "reference": against,
                       "relative_error": error, "bound": bound, "passed": passed})
        verdict = "reported" if bound is None else ("ok" if passed else "FAIL")
        print(f"  {what:<8} {layout:<19} {precision:<5} vs {against:<16} rel err {error:.3e}"
              f"{'' if bound is None else f' (bound {bound:.0e})'} {verdict}", flush=True)

    # The references among themselves: diffusers as shipped differs in its timestep frequencies.
    for name, out in reference_forward.items():
        if name != "torch_reference":
            record("forward", "reference", "fp32", name, relative_error(out, reference_forward["torch_reference"]),
                   bounded=name != "diffusers")

    labels = [1, config["num_classes"] - 2]
    schedule = reference.Schedule(args.steps)
    trajectories: dict[tuple[str, bytes], torch.Tensor] = {}  # every run starts from the same latents
    for layout, path in layouts.items():
        for precision in precisions:
            tag = f"{layout}-{precision}"
            out = engine_forward(args, path, inputs, precision, work / f"forward-{tag}.safetensors")
            for name, expected in reference_forward.items():
                record("forward", layout, precision, name, relative_error(out, expected), bounded=name != "diffusers")
            final, start = engine_ddim(args, path, labels, precision, work / f"ddim-{tag}")
            for name, ref in references.items():
                if name == "diffusers":
                    continue  # its trajectory differs by construction (the frequencies above)
                key = (name, start.numpy().tobytes())
                if key not in trajectories:
                    trajectories[key] = ddim(ref, schedule, start.double(), torch.tensor(labels, dtype=torch.int64))
                expected = trajectories[key]
                record(f"ddim{args.steps}", layout, precision, name, relative_error(final, expected), bounded=True)

    failed = [c for c in checks if c["passed"] is False]
    document = {
        "what": "bench/checkpoint_oracle.py: engine vs torch_reference and diffusers on one set of random weights",
        "model": args.model, "config": config, "weights_seed": WEIGHTS_SEED, "backend": args.backend,
        "ddim_steps": args.steps, "cfg_scale": CFG_SCALE, "bounds": BOUNDS,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "reference_device": device, "torch": torch.__version__, "diffusers": diffusers_version,
        "python": platform.python_version(), "checks": checks, "failed": len(failed),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"{len(checks)} checks, {len(failed)} failed; wrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
