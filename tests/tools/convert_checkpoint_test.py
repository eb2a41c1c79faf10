#!/usr/bin/env python3
"""tools/convert_checkpoint.py: a tiny original-layout DiT state dict (plain, and wrapped as a
training checkpoint) converts to the engine's names, shapes, values and __metadata__.config in
each dtype; a tiny VAE (diffusers and LDM names) converts to diffusers' decoder names; a missing,
unexpected or misshapen key, a NaN, an fp16 overflow, an unknown config and a file that is not a
checkpoint exit 2 naming the problem. Skips (exit 77) when torch or safetensors is missing.

    convert_checkpoint_test.py SOURCE_DIR
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else ".")
CONVERT = os.path.join(SOURCE, "tools", "convert_checkpoint.py")
SKIP = 77

try:
    import torch
    from safetensors import safe_open
except ImportError as missing:
    print(f"SKIP: {missing.name} is not importable by {sys.executable} "
          "(tools/install-deps.sh installs it; or pip install -r tools/requirements-convert.txt)")
    sys.exit(SKIP)

# dit_tiny_a of the reference vectors: depth 2, hidden 64, 4 heads, patch 2, 8x8x4 latents, 10 classes.
TINY = dict(input_size=8, patch_size=2, in_channels=4, hidden_size=64, depth=2, num_heads=4,
            mlp_ratio=4.0, num_classes=10, learn_sigma=True)


def tiny_dit(seed: int) -> dict:
    """The original DiT models.py names and shapes, written out here on their own."""
    generator = torch.Generator().manual_seed(seed)
    D, p, C, M = 64, 2, 4, 256
    shapes = {"pos_embed": (1, 16, D), "x_embedder.proj.weight": (D, C, p, p), "x_embedder.proj.bias": (D,),
              "t_embedder.mlp.0.weight": (D, 256), "t_embedder.mlp.0.bias": (D,),
              "t_embedder.mlp.2.weight": (D, D), "t_embedder.mlp.2.bias": (D,),
              "y_embedder.embedding_table.weight": (11, D),
              "final_layer.adaLN_modulation.1.weight": (2 * D, D), "final_layer.adaLN_modulation.1.bias": (2 * D,),
              "final_layer.linear.weight": (p * p * 2 * C, D), "final_layer.linear.bias": (p * p * 2 * C,)}
    for i in range(2):
        for name, shape in (("attn.qkv", (3 * D, D)), ("attn.proj", (D, D)), ("mlp.fc1", (M, D)),
                            ("mlp.fc2", (D, M)), ("adaLN_modulation.1", (6 * D, D))):
            shapes[f"blocks.{i}.{name}.weight"], shapes[f"blocks.{i}.{name}.bias"] = shape, shape[:1]
    return {name: torch.randn(shape, generator=generator) * 0.05 for name, shape in shapes.items()}


# vae_tiny of the reference vectors (block_out_channels [32, 64], one layer per block), diffusers names.
def tiny_vae(seed: int) -> dict:
    generator = torch.Generator().manual_seed(seed)
    shapes = {"post_quant_conv.weight": (4, 4, 1, 1), "post_quant_conv.bias": (4,),
              "decoder.conv_in.weight": (64, 4, 3, 3), "decoder.conv_in.bias": (64,),
              "decoder.conv_norm_out.weight": (32,), "decoder.conv_norm_out.bias": (32,),
              "decoder.conv_out.weight": (3, 32, 3, 3), "decoder.conv_out.bias": (3,),
              "decoder.mid_block.attentions.0.group_norm.weight": (64,),
              "decoder.mid_block.attentions.0.group_norm.bias": (64,)}
    for projection in ("to_q", "to_k", "to_v", "to_out.0"):
        shapes[f"decoder.mid_block.attentions.0.{projection}.weight"] = (64, 64)
        shapes[f"decoder.mid_block.attentions.0.{projection}.bias"] = (64,)

    def resnet(prefix, cin, cout):
        for name, shape in (("norm1", (cin,)), ("conv1", (cout, cin, 3, 3)), ("norm2", (cout,)),
                            ("conv2", (cout, cout, 3, 3))) + ((("conv_shortcut", (cout, cin, 1, 1)),)
                                                              if cin != cout else ()):
            shapes[prefix + name + ".weight"], shapes[prefix + name + ".bias"] = shape, shape[:1]

    resnet("decoder.mid_block.resnets.0.", 64, 64)
    resnet("decoder.mid_block.resnets.1.", 64, 64)
    for j in range(2):
        resnet(f"decoder.up_blocks.0.resnets.{j}.", 64, 64)
        resnet(f"decoder.up_blocks.1.resnets.{j}.", 64 if j == 0 else 32, 32)
    shapes["decoder.up_blocks.0.upsamplers.0.conv.weight"] = (64, 64, 3, 3)
    shapes["decoder.up_blocks.0.upsamplers.0.conv.bias"] = (64,)
    return {name: torch.randn(shape, generator=generator) for name, shape in shapes.items()}


def ldm_names(diffusers: dict) -> dict:
    """The same decoder under the original LDM names, by the test's own table (two up blocks)."""
    table = [(r"decoder\.mid_block\.resnets\.0\.", "decoder.mid.block_1."),
             (r"decoder\.mid_block\.resnets\.1\.", "decoder.mid.block_2."),
             (r"decoder\.mid_block\.attentions\.0\.group_norm\.", "decoder.mid.attn_1.norm."),
             (r"decoder\.mid_block\.attentions\.0\.to_q\.", "decoder.mid.attn_1.q."),
             (r"decoder\.mid_block\.attentions\.0\.to_k\.", "decoder.mid.attn_1.k."),
             (r"decoder\.mid_block\.attentions\.0\.to_v\.", "decoder.mid.attn_1.v."),
             (r"decoder\.mid_block\.attentions\.0\.to_out\.0\.", "decoder.mid.attn_1.proj_out."),
             (r"decoder\.conv_norm_out\.", "decoder.norm_out."),
             (r"decoder\.up_blocks\.0\.upsamplers\.0\.", "decoder.up.1.upsample."),
             (r"decoder\.up_blocks\.0\.resnets\.", "decoder.up.1.block."),
             (r"decoder\.up_blocks\.1\.resnets\.", "decoder.up.0.block."),
             (r"\.conv_shortcut\.", ".nin_shortcut.")]
    out = {}
    for name, tensor in diffusers.items():
        renamed = name
        for pattern, replacement in table:
            renamed = re.sub(pattern, replacement, renamed)
        out[renamed] = tensor[..., None, None] if ".attn_1." in renamed and tensor.dim() == 2 else tensor
    return out


class ConvertCheckpoint(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.addCleanup(self.folder.cleanup)

    def path(self, name):
        return os.path.join(self.folder.name, name)

    def convert(self, checkpoint, *extra, kind="dit", name="input.pt"):
        source = self.path(name)
        if isinstance(checkpoint, (bytes, str)):
            with open(source, "wb") as handle:
                handle.write(checkpoint.encode() if isinstance(checkpoint, str) else checkpoint)
        else:
            torch.save(checkpoint, source)
        output = self.path("out.safetensors")
        if os.path.exists(output):
            os.remove(output)
        result = subprocess.run([sys.executable, CONVERT, "--kind", kind, "--input", source, "--output", output,
                                 *extra], capture_output=True, text=True)
        return result, output

    def read(self, output):
        with safe_open(output, framework="pt") as handle:
            return {name: handle.get_tensor(name) for name in handle.keys()}, handle.metadata()

    def expect_refused(self, result, *words):
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        for word in words:
            self.assertIn(word, result.stderr)
        self.assertFalse(os.path.exists(self.path("out.safetensors")), "a refused conversion wrote its output")

    def test_a_plain_state_dict_keeps_its_names_shapes_and_values(self):
        weights = tiny_dit(1)
        result, output = self.convert(weights)
        self.assertEqual(result.returncode, 0, result.stderr)
        tensors, metadata = self.read(output)
        self.assertEqual(sorted(tensors), sorted(weights))
        for name, tensor in weights.items():
            self.assertEqual(tensors[name].dtype, torch.float32, name)
            self.assertTrue(torch.equal(tensors[name], tensor), name)
        self.assertEqual(json.loads(metadata["config"]), dict(name="dit_tiny_a", **TINY))
        self.assertEqual(metadata["weights"], "state dict")
        self.assertEqual(os.listdir(self.folder.name), ["input.pt", "out.safetensors"])  # no temporary left

    def test_a_training_checkpoint_gives_its_ema_weights(self):
        model, ema = tiny_dit(1), tiny_dit(2)
        checkpoint = {"model": model, "ema": ema, "opt": {"state": {}}, "args": argparse.Namespace(lr=1e-4)}
        if not hasattr(torch.serialization, "safe_globals"):
            del checkpoint["args"]  # older torch: weights_only refuses a Namespace
        result, output = self.convert(checkpoint)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("taking the 'ema' entry", result.stdout)
        tensors, metadata = self.read(output)
        self.assertEqual(metadata["weights"], "'ema' entry")
        for name, tensor in ema.items():
            self.assertTrue(torch.equal(tensors[name], tensor), name)
        result, output = self.convert({"model": model})
        self.assertIn("taking the 'model' entry", result.stdout)
        self.assertTrue(torch.equal(self.read(output)[0]["blocks.1.mlp.fc2.bias"], model["blocks.1.mlp.fc2.bias"]))

    def test_half_precision_outputs_round_each_value(self):
        weights = tiny_dit(3)
        for dtype, torch_dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
            result, output = self.convert(weights, "--dtype", dtype)
            self.assertEqual(result.returncode, 0, result.stderr)
            tensors, metadata = self.read(output)
            self.assertEqual(metadata["dtype"], dtype)
            for name, tensor in weights.items():
                self.assertEqual(tensors[name].dtype, torch_dtype, name)
                self.assertTrue(torch.equal(tensors[name], tensor.to(torch_dtype)), name)

    def test_bad_keys_and_shapes_are_named(self):
        weights = tiny_dit(4)
        del weights["blocks.1.attn.qkv.bias"]
        self.expect_refused(self.convert(weights)[0], "1 problem",
                            "missing key 'blocks.1.attn.qkv.bias' (expected shape [192])")

        weights = tiny_dit(4)
        weights["blocks.0.attn.proj.weight"] = torch.zeros(64, 65)
        self.expect_refused(self.convert(weights)[0],
                            "key 'blocks.0.attn.proj.weight' has shape [64, 65], expected [64, 64]")

        weights = tiny_dit(4)
        weights["blocks.0.attn.q_norm.weight"] = torch.zeros(16)
        self.expect_refused(self.convert(weights)[0], "unexpected key 'blocks.0.attn.q_norm.weight' of shape [16]")

        weights = tiny_dit(4)
        del weights["x_embedder.proj.weight"]
        self.expect_refused(self.convert(weights)[0], "not an original DiT state dict",
                            "missing key 'x_embedder.proj.weight'")

    def test_bad_values_are_named(self):
        weights = tiny_dit(5)
        weights["blocks.1.mlp.fc1.weight"][3, 7] = float("nan")
        self.expect_refused(self.convert(weights)[0], "key 'blocks.1.mlp.fc1.weight' holds a non-finite value",
                            "element 199")

        weights = tiny_dit(5)
        weights["final_layer.linear.bias"][2] = 1e6
        self.expect_refused(self.convert(weights, "--dtype", "fp16")[0], "key 'final_layer.linear.bias' overflows fp16")

        weights = tiny_dit(5)
        weights["t_embedder.mlp.0.bias"] = torch.zeros(64, dtype=torch.int64)
        self.expect_refused(self.convert(weights)[0], "key 't_embedder.mlp.0.bias' has dtype torch.int64")

    def test_an_unknown_config_needs_its_head_count(self):
        weights = tiny_dit(6)
        weights["y_embedder.embedding_table.weight"] = torch.zeros(21, 64)  # 20 classes
        self.expect_refused(self.convert(weights)[0], "num_classes 20", "none of the engine's known configs",
                            "--num-heads")
        result, output = self.convert(weights, "--num-heads", "8")
        self.assertEqual(result.returncode, 0, result.stderr)
        config = json.loads(self.read(output)[1]["config"])
        self.assertEqual((config["name"], config["num_heads"], config["num_classes"]), ("custom", 8, 20))
        self.expect_refused(self.convert(tiny_dit(6), "--num-heads", "8")[0], "contradicts dit_tiny_a")

    def test_a_refused_conversion_leaves_an_existing_output_as_it_was(self):
        weights = tiny_dit(8)
        weights["pos_embed"][0, 0, 0] = float("inf")
        torch.save(weights, self.path("input.pt"))
        with open(self.path("old.safetensors"), "w") as handle:
            handle.write("the previous output")
        result = subprocess.run([sys.executable, CONVERT, "--kind", "dit", "--input", self.path("input.pt"),
                                 "--output", self.path("old.safetensors")], capture_output=True, text=True)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("key 'pos_embed' holds a non-finite value (inf at element 0)", result.stderr)
        with open(self.path("old.safetensors")) as handle:
            self.assertEqual(handle.read(), "the previous output")
        self.assertEqual(sorted(os.listdir(self.folder.name)), ["input.pt", "old.safetensors"])

    def test_a_file_that_is_not_a_checkpoint_is_refused(self):
        self.expect_refused(self.convert("not a pickle at all\n")[0], "not a PyTorch checkpoint")
        self.expect_refused(self.convert([1, 2, 3])[0], "holds a list, not a state dict")
        self.expect_refused(self.convert({"x": "y"})[0], "'x' is a str, not a tensor")
        result = subprocess.run([sys.executable, CONVERT, "--kind", "dit", "--input", self.path("absent.pt"),
                                 "--output", self.path("out.safetensors")], capture_output=True, text=True)
        self.expect_refused(result, "absent.pt: no such file")

    def test_a_vae_keeps_its_decoder_under_diffusers_names(self):
        vae = tiny_vae(7)
        encoder = {"encoder.conv_in.weight": torch.zeros(32, 3, 3, 3), "quant_conv.weight": torch.zeros(8, 8, 1, 1)}
        for layout, state in (("diffusers", vae), ("LDM", {"state_dict": {**ldm_names(vae), **encoder}})):
            with self.subTest(layout=layout):
                result, output = self.convert(state, kind="vae")
                self.assertEqual(result.returncode, 0, result.stderr)
                tensors, metadata = self.read(output)
                self.assertEqual(sorted(tensors), sorted(vae))
                for name, tensor in vae.items():
                    self.assertTrue(torch.equal(tensors[name], tensor), name)
                self.assertEqual(json.loads(metadata["config"]), {"latent_channels": 4, "block_out_channels": [32, 64],
                                                                  "layers_per_block": 1, "norm_num_groups": 8})
                self.assertEqual(metadata["source_layout"], layout)

        broken = ldm_names(vae)
        del broken["decoder.mid.attn_1.k.bias"]
        self.expect_refused(self.convert(broken, kind="vae")[0], "missing key 'decoder.mid.attn_1.k.bias'")
        self.expect_refused(self.convert(tiny_dit(1), kind="vae")[0], "not a VAE decoder state dict")


if __name__ == "__main__":
    unittest.main()
