#!/usr/bin/env python3
"""Converts a PyTorch checkpoint into the engine's safetensors layout.

  --kind dit: an original facebookresearch/DiT state dict (DiT-XL-2-256x256.pt,
      DiT-XL-2-512x512.pt, or a training checkpoint {"model", "ema", ...}, whose "ema" is taken).
      The config (depth, hidden size, patch size, input size, classes, learned sigma, MLP ratio)
      is inferred from the shapes, the head count from the engine's known configs; the tensors
      keep their names (the engine's loader reads the original names) and the config goes into
      __metadata__.config, as model_config_from_json reads it.
  --kind vae: an AutoencoderKL state dict, LDM (CompVis) or diffusers names (a {"state_dict"}
      wrapper is unwrapped); only post_quant_conv and the decoder are kept, written under
      diffusers' names (LDM's 1x1-convolution attention weights become [C, C]); the config
      goes into __metadata__.config, as vae_config_from_json reads it.

Every problem (an unreadable file, a missing, unexpected or misshapen tensor, a NaN or an
infinity, a value the chosen dtype cannot hold, a config the engine does not know) is named on
stderr with exit status 2. The output is written atomically: a temporary file beside it, fsync,
rename. Pickles are read with torch.load(weights_only=True): no code of the file runs.

  tools/convert_checkpoint.py --kind dit --input DiT-XL-2-256x256.pt --output dit-xl-2-256.safetensors
  tools/convert_checkpoint.py --kind vae --input vae-ft-ema.pt --output sd-vae-ft-ema.safetensors --dtype fp16

Needs torch and safetensors (tools/requirements-convert.txt).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile

# The engine's DiT family (model/config.cpp, after upstream models.py): depth, hidden, heads.
DIT_FAMILIES = {"S": (12, 384, 6), "B": (12, 768, 12), "L": (24, 1024, 16), "XL": (28, 1152, 16)}
DIT_PATCH_SIZES = (2, 4, 8)
DIT_IMAGE_SIZES = (256, 512)
# The reference vectors' tiny DiTs (tests/data/dit_tiny_{a,b}.weights.safetensors).
DIT_TINY = {
    "dit_tiny_a": dict(input_size=8, patch_size=2, hidden_size=64, depth=2, num_heads=4, num_classes=10),
    "dit_tiny_b": dict(input_size=8, patch_size=2, hidden_size=144, depth=2, num_heads=2, num_classes=10),
}
# The engine's VAE decoders (model/vae_config.cpp: sd_vae_config, tiny_vae_config) and the
# reference vectors' vae_tiny.
VAE_KNOWN = {
    "sd": dict(latent_channels=4, block_out_channels=[128, 256, 512, 512], layers_per_block=2, norm_num_groups=32),
    "tiny": dict(latent_channels=4, block_out_channels=[32, 32, 64, 64], layers_per_block=1, norm_num_groups=8),
    "vae_tiny": dict(latent_channels=4, block_out_channels=[32, 64], layers_per_block=1, norm_num_groups=8),
}
PROBLEMS_LISTED = 8  # enough to see a pattern (a wrong depth) without a wall


class ConversionError(Exception):
    """A problem with the input, reported on stderr with exit status 2."""


def problems_error(what: str, problems: list[str]) -> ConversionError:
    shown = "; ".join(problems[:PROBLEMS_LISTED])
    more = f"; and {len(problems) - PROBLEMS_LISTED} more" if len(problems) > PROBLEMS_LISTED else ""
    return ConversionError(f"{what} ({len(problems)} problem{'s' if len(problems) != 1 else ''}): {shown}{more}")


def shape_text(shape) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


# ---------------------------------------------------------------------------------------------
# Reading


def load_pickle(torch, path: str):
    if not os.path.isfile(path):
        raise ConversionError(f"{path}: no such file")
    safe = []
    # DiT's train.py saves its argparse.Namespace beside the weights: a plain attribute bag.
    if hasattr(torch.serialization, "safe_globals"):
        safe = [argparse.Namespace]
    try:
        if safe:
            with torch.serialization.safe_globals(safe):
                return torch.load(path, map_location="cpu", weights_only=True)
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises several types for a file it cannot read
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConversionError(
            f"{path}: not a PyTorch checkpoint that torch.load(weights_only=True) reads ({reason})") from None


def unwrap_state_dict(torch, loaded, path: str, wrappers: tuple[str, ...]) -> tuple[dict, str]:
    """The flat name -> tensor dict, and which entry it came from."""
    if not isinstance(loaded, dict):
        raise ConversionError(f"{path}: holds a {type(loaded).__name__}, not a state dict")
    source = "state dict"
    for key in wrappers:
        if key in loaded and isinstance(loaded[key], dict):
            loaded, source = loaded[key], f"'{key}' entry"
            break
    problems = [f"'{name}' is a {type(value).__name__}, not a tensor"
                for name, value in loaded.items() if not isinstance(value, torch.Tensor)]
    if problems:
        raise problems_error(f"{path}: the {source} is not a state dict of tensors", problems)
    if not loaded:
        raise ConversionError(f"{path}: the {source} is empty")
    return loaded, source


def check_tensors(torch, tensors: dict, expected: dict, what: str) -> None:
    """Every expected name present with its shape, nothing else, floating and finite."""
    problems = []
    for name, shape in expected.items():
        if name not in tensors:
            problems.append(f"missing key '{name}' (expected shape {shape_text(shape)})")
        elif tuple(tensors[name].shape) != tuple(shape):
            problems.append(
                f"key '{name}' has shape {shape_text(tensors[name].shape)}, expected {shape_text(shape)}")
    problems += [f"unexpected key '{name}' of shape {shape_text(tensors[name].shape)}"
                 for name in tensors if name not in expected]
    if problems:
        raise problems_error(f"{what} does not match", problems)
    for name, tensor in tensors.items():
        if not tensor.is_floating_point():
            problems.append(f"key '{name}' has dtype {tensor.dtype}, not a floating type")
        elif not bool(torch.isfinite(tensor).all()):
            problems.append(f"key '{name}' holds {non_finite_text(torch, tensor)}")
    if problems:
        raise problems_error(f"{what} has bad values", problems)


def non_finite_text(torch, tensor) -> str:
    flat = tensor.reshape(-1)
    index = int((~torch.isfinite(flat)).nonzero()[0])
    return f"a non-finite value ({float(flat[index])} at element {index})"


# ---------------------------------------------------------------------------------------------
# DiT


def dit_expected_shapes(c: dict) -> dict:
    """As model/weights.cpp's expected_weight_shapes."""
    D, M, p = c["hidden_size"], int(c["hidden_size"] * c["mlp_ratio"]), c["patch_size"]
    out = p * p * c["in_channels"] * (2 if c["learn_sigma"] else 1)
    grid = c["input_size"] // p
    shapes = {
        "pos_embed": (1, grid * grid, D),
        "x_embedder.proj.weight": (D, c["in_channels"], p, p),
        "x_embedder.proj.bias": (D,),
        "t_embedder.mlp.0.weight": (D, 256),
        "t_embedder.mlp.0.bias": (D,),
        "t_embedder.mlp.2.weight": (D, D),
        "t_embedder.mlp.2.bias": (D,),
        "y_embedder.embedding_table.weight": (c["num_classes"] + 1, D),
    }
    for i in range(c["depth"]):
        b = f"blocks.{i}."
        shapes.update({
            b + "attn.qkv.weight": (3 * D, D), b + "attn.qkv.bias": (3 * D,),
            b + "attn.proj.weight": (D, D), b + "attn.proj.bias": (D,),
            b + "mlp.fc1.weight": (M, D), b + "mlp.fc1.bias": (M,),
            b + "mlp.fc2.weight": (D, M), b + "mlp.fc2.bias": (D,),
            b + "adaLN_modulation.1.weight": (6 * D, D), b + "adaLN_modulation.1.bias": (6 * D,),
        })
    shapes.update({
        "final_layer.adaLN_modulation.1.weight": (2 * D, D),
        "final_layer.adaLN_modulation.1.bias": (2 * D,),
        "final_layer.linear.weight": (out, D),
        "final_layer.linear.bias": (out,),
    })
    return shapes


def known_dit_configs() -> list[dict]:
    known = []
    for family, (depth, hidden, heads) in DIT_FAMILIES.items():
        for patch in DIT_PATCH_SIZES:
            for image in DIT_IMAGE_SIZES:
                known.append(dict(name=f"DiT-{family}/{patch}", input_size=image // 8, patch_size=patch,
                                  in_channels=4, hidden_size=hidden, depth=depth, num_heads=heads,
                                  mlp_ratio=4.0, num_classes=1000, learn_sigma=True))
    for name, fields in DIT_TINY.items():
        known.append(dict(name=name, in_channels=4, mlp_ratio=4.0, learn_sigma=True, **fields))
    return known


def infer_dit_config(tensors: dict, path: str, num_heads: int | None) -> dict:
    needed = ["x_embedder.proj.weight", "pos_embed", "y_embedder.embedding_table.weight",
              "final_layer.linear.weight", "blocks.0.mlp.fc1.weight"]
    missing = [f"missing key '{name}'" for name in needed if name not in tensors]
    if missing:
        raise problems_error(f"{path}: not an original DiT state dict (x_embedder, blocks.N, final_layer)", missing)
    shape = {name: tuple(tensors[name].shape) for name in needed}
    def fail(what):
        return ConversionError(f"{path}: cannot infer the DiT config: {what}")

    embedder = shape["x_embedder.proj.weight"]
    if len(embedder) != 4 or embedder[2] != embedder[3]:
        raise fail(f"x_embedder.proj.weight has shape {shape_text(embedder)}, not [hidden, channels, patch, patch]")
    hidden, channels, patch, _ = embedder
    if len(shape["pos_embed"]) != 3 or shape["pos_embed"][0] != 1:
        raise fail(f"pos_embed has shape {shape_text(shape['pos_embed'])}, not [1, tokens, hidden]")
    tokens = shape["pos_embed"][1]
    grid = math.isqrt(tokens)
    if grid * grid != tokens:
        raise fail(f"pos_embed has {tokens} tokens, not a square grid")
    if len(shape["y_embedder.embedding_table.weight"]) != 2 or shape["y_embedder.embedding_table.weight"][0] < 2:
        raise fail(f"y_embedder.embedding_table.weight has shape "
                   f"{shape_text(shape['y_embedder.embedding_table.weight'])}, not [classes + 1, hidden]")
    out_rows = shape["final_layer.linear.weight"][0]
    if out_rows == patch * patch * 2 * channels:
        learn_sigma = True
    elif out_rows == patch * patch * channels:
        learn_sigma = False
    else:
        raise fail(f"final_layer.linear.weight has {out_rows} rows, neither patch^2 x channels "
                   f"({patch * patch * channels}) nor twice it (learned sigma)")
    depth = 1 + max(int(m.group(1)) for name in tensors if (m := re.match(r"blocks\.(\d+)\.", name)))
    config = dict(input_size=grid * patch, patch_size=patch, in_channels=channels, hidden_size=hidden,
                  depth=depth, mlp_ratio=shape["blocks.0.mlp.fc1.weight"][0] / hidden,
                  num_classes=shape["y_embedder.embedding_table.weight"][0] - 1, learn_sigma=learn_sigma)
    for known in known_dit_configs():
        if all(known[key] == value for key, value in config.items()):
            if num_heads is not None and num_heads != known["num_heads"]:
                raise ConversionError(f"{path}: --num-heads {num_heads} contradicts {known['name']}, "
                                      f"which has {known['num_heads']} heads")
            return dict(name=known["name"], num_heads=known["num_heads"], **config)
    described = ", ".join(f"{key} {value}" for key, value in config.items())
    if num_heads is None:
        raise ConversionError(
            f"{path}: the inferred config ({described}) is none of the engine's known configs "
            "(DiT-S/B/L/XL with patch 2, 4 or 8 at 256 or 512, 1000 classes; the reference vectors' "
            "dit_tiny_a and dit_tiny_b); the head count cannot be read from the shapes: give --num-heads "
            "to convert it anyway")
    if hidden % num_heads or num_heads < 1:
        raise ConversionError(f"{path}: --num-heads {num_heads} does not divide hidden size {hidden}")
    return dict(name="custom", num_heads=num_heads, **config)


def convert_dit(torch, path: str, num_heads: int | None) -> tuple[dict, dict]:
    tensors, source = unwrap_state_dict(torch, load_pickle(torch, path), path, ("ema", "model", "state_dict"))
    print(f"{path}: taking the {source}" + (" (EMA weights, as DiT samples with)" if source == "'ema' entry" else ""))
    config = infer_dit_config(tensors, path, num_heads)
    check_tensors(torch, tensors, dit_expected_shapes(config), f"{path} ({config['name']})")
    metadata = {"config": json.dumps(config), "weights": source}
    return tensors, metadata


# ---------------------------------------------------------------------------------------------
# VAE


def vae_expected_shapes(c: dict) -> dict:
    """As model/vae_config.cpp's parameter_shapes: diffusers names, attention as [C, C]."""
    shapes = {}

    def conv(prefix, cin, cout, k):
        shapes[prefix + "weight"], shapes[prefix + "bias"] = (cout, cin, k, k), (cout,)

    def norm(prefix, ch):
        shapes[prefix + "weight"], shapes[prefix + "bias"] = (ch,), (ch,)

    def resnet(prefix, cin, cout):
        norm(prefix + "norm1.", cin)
        conv(prefix + "conv1.", cin, cout, 3)
        norm(prefix + "norm2.", cout)
        conv(prefix + "conv2.", cout, cout, 3)
        if cin != cout:
            conv(prefix + "conv_shortcut.", cin, cout, 1)

    channels, latent = c["block_out_channels"], c["latent_channels"]
    top = channels[-1]
    conv("post_quant_conv.", latent, latent, 1)
    conv("decoder.conv_in.", latent, top, 3)
    resnet("decoder.mid_block.resnets.0.", top, top)
    norm("decoder.mid_block.attentions.0.group_norm.", top)
    for projection in ("to_q.", "to_k.", "to_v.", "to_out.0."):
        shapes["decoder.mid_block.attentions.0." + projection + "weight"] = (top, top)
        shapes["decoder.mid_block.attentions.0." + projection + "bias"] = (top,)
    resnet("decoder.mid_block.resnets.1.", top, top)
    previous = top
    for i in range(len(channels)):
        ch = channels[len(channels) - 1 - i]
        for j in range(c["layers_per_block"] + 1):
            resnet(f"decoder.up_blocks.{i}.resnets.{j}.", previous if j == 0 else ch, ch)
        if i + 1 < len(channels):
            conv(f"decoder.up_blocks.{i}.upsamplers.0.conv.", ch, ch, 3)
        previous = ch
    norm("decoder.conv_norm_out.", channels[0])
    conv("decoder.conv_out.", channels[0], 3, 3)
    return shapes


LDM_FIXED = [
    ("decoder.mid_block.resnets.0.", "decoder.mid.block_1."),
    ("decoder.mid_block.resnets.1.", "decoder.mid.block_2."),
    ("decoder.mid_block.attentions.0.group_norm.", "decoder.mid.attn_1.norm."),
    ("decoder.mid_block.attentions.0.to_q.", "decoder.mid.attn_1.q."),
    ("decoder.mid_block.attentions.0.to_k.", "decoder.mid.attn_1.k."),
    ("decoder.mid_block.attentions.0.to_v.", "decoder.mid.attn_1.v."),
    ("decoder.mid_block.attentions.0.to_out.0.", "decoder.mid.attn_1.proj_out."),
    ("decoder.conv_norm_out.", "decoder.norm_out."),
]
# diffusers before 0.14 named the attention projections query, key, value and proj_attn.
DIFFUSERS_OLD_ATTENTION = {"query.": "to_q.", "key.": "to_k.", "value.": "to_v.", "proj_attn.": "to_out.0."}


def ldm_name(name: str, blocks: int) -> str:
    """As model/vae_config.cpp's ldm_name: the LDM name of a diffusers decoder name."""
    for diffusers, ldm in LDM_FIXED:
        if name.startswith(diffusers):
            return ldm + name[len(diffusers):]
    match = re.match(r"decoder\.up_blocks\.(\d+)\.(.*)", name)
    if not match:
        return name
    rest = match.group(2)
    if rest.startswith("resnets."):
        rest = "block." + rest[len("resnets."):].replace(".conv_shortcut.", ".nin_shortcut.")
    elif rest.startswith("upsamplers.0."):
        rest = "upsample." + rest[len("upsamplers.0."):]
    return f"decoder.up.{blocks - 1 - int(match.group(1))}.{rest}"


def infer_vae_config(decoder: dict, ldm: bool, path: str) -> dict:
    """Latent and block channels and layers per block from the shapes; groups from the known table."""
    def shape(name):
        if name not in decoder:
            raise ConversionError(f"{path}: cannot infer the VAE config: missing key '{name}'")
        return tuple(decoder[name].shape)

    latent = shape("post_quant_conv.weight")[0]
    up = r"decoder\.up\.(\d+)\.block\.(\d+)\." if ldm else r"decoder\.up_blocks\.(\d+)\.resnets\.(\d+)\."
    found = [tuple(int(g) for g in m.groups()) for name in decoder if (m := re.match(up, name))]
    if not found:
        raise ConversionError(f"{path}: cannot infer the VAE config: no up-block resnets in the decoder")
    blocks = 1 + max(b for b, _ in found)
    layers = max(r for _, r in found)
    channels = []
    for i in range(blocks):  # block_out_channels order: LDM's up.i, diffusers' up_blocks.(blocks - 1 - i)
        prefix = f"decoder.up.{i}.block.0." if ldm else f"decoder.up_blocks.{blocks - 1 - i}.resnets.0."
        channels.append(shape(prefix + "conv2.weight")[0])
    for name, known in VAE_KNOWN.items():
        if (known["latent_channels"], known["block_out_channels"], known["layers_per_block"]) == (
                latent, channels, layers):
            return dict(name=name, **known)
    raise ConversionError(
        f"{path}: the inferred VAE decoder (latent_channels {latent}, block_out_channels {channels}, "
        f"layers_per_block {layers}) is none of the engine's known decoders "
        + ", ".join(f"{n} {k['block_out_channels']}" for n, k in VAE_KNOWN.items()))


def convert_vae(torch, path: str) -> tuple[dict, dict]:
    tensors, source = unwrap_state_dict(torch, load_pickle(torch, path), path, ("state_dict",))
    print(f"{path}: taking the {source}")
    decoder, dropped = {}, 0
    for name, tensor in tensors.items():
        if name.startswith(("encoder.", "quant_conv.")):
            dropped += 1
            continue
        for old, new in DIFFUSERS_OLD_ATTENTION.items():
            name = name.replace("attentions.0." + old, "attentions.0." + new)
        decoder[name] = tensor
    if dropped:
        print(f"{path}: leaving out the encoder side ({dropped} tensors of encoder.* and quant_conv.*)")
    ldm = "decoder.mid.block_1.conv1.weight" in decoder
    if not ldm and "decoder.mid_block.resnets.0.conv1.weight" not in decoder:
        raise ConversionError(f"{path}: not a VAE decoder state dict (neither decoder.mid_block.resnets.0.conv1.weight "
                              "(diffusers) nor decoder.mid.block_1.conv1.weight (LDM) is present)")
    config = infer_vae_config(decoder, ldm, path)
    blocks = len(config["block_out_channels"])
    expected = vae_expected_shapes(config)
    stored_shapes, diffusers_of = {}, {}
    for name, shape in expected.items():
        stored = ldm_name(name, blocks) if ldm else name
        if ldm and len(shape) == 2 and ".attentions.0.to_" in name:
            shape = shape + (1, 1)  # LDM's attention projections are 1x1 convolutions
        stored_shapes[stored], diffusers_of[stored] = shape, name
    layout = "LDM" if ldm else "diffusers"
    check_tensors(torch, decoder, stored_shapes, f"{path} ({layout} names, the {config['name']} decoder)")
    out = {diffusers_of[stored]: tensor.reshape(expected[diffusers_of[stored]]) for stored, tensor in decoder.items()}
    name = config.pop("name")
    metadata = {"config": json.dumps(config), "weights": source, "source_layout": layout, "decoder": name}
    return out, metadata


# ---------------------------------------------------------------------------------------------
# Writing


def cast(torch, tensors: dict, dtype_name: str) -> dict:
    dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype_name]
    out, problems = {}, []
    for name, tensor in tensors.items():
        # A copy per tensor: state dicts may share storage, which safetensors refuses.
        converted = tensor.detach().to(dtype=dtype, copy=True).contiguous()
        if not bool(torch.isfinite(converted).all()):
            problems.append(f"key '{name}' overflows {dtype_name}: {non_finite_text(torch, converted)}")
        out[name] = converted
    if problems:
        raise problems_error(f"the values do not fit {dtype_name} (convert to fp32 or bf16)", problems)
    return out


def write_atomically(save_file, tensors: dict, metadata: dict, output: str) -> None:
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        raise ConversionError(f"{output}: the folder {folder} does not exist")
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(output) + ".", suffix=".tmp")
    os.close(descriptor)
    try:
        save_file(tensors, temporary, metadata=metadata)
        with open(temporary, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, output)
        folder_descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(folder_descriptor)
        finally:
            os.close(folder_descriptor)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", choices=("dit", "vae"), required=True)
    parser.add_argument("--input", required=True, help="a torch.save'd state dict (.pt, .pth, .ckpt, .bin)")
    parser.add_argument("--output", required=True, help="the safetensors file to write")
    parser.add_argument("--dtype", choices=("fp32", "fp16", "bf16"), default="fp32",
                        help="the stored dtype (the engine reads each as float32; default fp32)")
    parser.add_argument("--num-heads", type=int, help="DiT only: heads of a config outside the known table")
    args = parser.parse_args(argv)
    if args.num_heads is not None and args.kind != "dit":
        parser.error("--num-heads is for --kind dit")
    try:
        import torch
        from safetensors.torch import save_file
    except ImportError as error:
        print(f"convert_checkpoint: error: {error.name} is not installed: "
              "python3 -m pip install -r tools/requirements-convert.txt", file=sys.stderr)
        return 2
    try:
        if args.kind == "dit":
            tensors, metadata = convert_dit(torch, args.input, args.num_heads)
        else:
            tensors, metadata = convert_vae(torch, args.input)
        metadata["source"] = f"tools/convert_checkpoint.py from {os.path.basename(args.input)}"
        metadata["dtype"] = args.dtype
        write_atomically(save_file, cast(torch, tensors, args.dtype), metadata, args.output)
    except ConversionError as error:
        print(f"convert_checkpoint: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"convert_checkpoint: error: {error}", file=sys.stderr)
        return 2
    count = sum(t.numel() for t in tensors.values())
    print(f"wrote {args.output}: {len(tensors)} tensors, {count:,} values as {args.dtype}, "
          f"config {metadata['config']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
