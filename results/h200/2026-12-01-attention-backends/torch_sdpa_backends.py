# Time torch SDPA backends on DiT-XL/2 attention shapes (qkv packed [B, T, 3, H, D] as timm does).
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
print(torch.__version__, torch.backends.cudnn.version(), torch.cuda.get_device_name())
H, D = 16, 72
for B, T in [(2, 256), (64, 256), (2, 1024)]:
    qkv = torch.randn(B, T, 3, H, D, device="cuda", dtype=torch.float16)
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
    for name, be in [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                     ("efficient", SDPBackend.EFFICIENT_ATTENTION)]:
        try:
            with sdpa_kernel([be]):
                for _ in range(3): F.scaled_dot_product_attention(q, k, v)
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph(); s = torch.cuda.Stream()
                with torch.cuda.stream(s):
                    with torch.cuda.graph(g):
                        for _ in range(20): o = F.scaled_dot_product_attention(q, k, v)
                torch.cuda.synchronize()
                best = 1e9
                for _ in range(10):
                    a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
                    a.record(); g.replay(); b.record(); torch.cuda.synchronize()
                    best = min(best, a.elapsed_time(b) * 1000 / 20)
                print(f"B={B} T={T} {name}: {best:.2f} us/call")
        except Exception as e:
            print(f"B={B} T={T} {name}: failed {type(e).__name__}: {str(e)[:200]}")
