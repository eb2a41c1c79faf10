// What a kernel node and a graph launch cost on this GPU: chains of small kernels captured in
// one graph, replayed back to back. nvcc -O2 -arch=sm_86 graph_overhead.cu -o graph_overhead
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>

__global__ void touch(float* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * 0.5f + 1.0f;
}

static float run(int blocks, int threads, int nodes, int replays, float* buf, cudaStream_t s) {
  cudaGraph_t g;
  cudaGraphExec_t e;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  for (int i = 0; i < nodes; ++i) touch<<<blocks, threads, 0, s>>>(buf, blocks * threads);
  cudaStreamEndCapture(s, &g);
  cudaGraphInstantiate(&e, g, 0);
  for (int i = 0; i < 3; ++i) cudaGraphLaunch(e, s);
  cudaStreamSynchronize(s);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a, s);
  for (int i = 0; i < replays; ++i) cudaGraphLaunch(e, s);
  cudaEventRecord(b, s);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaGraphExecDestroy(e);
  cudaGraphDestroy(g);
  return ms;
}

int main() {
  float* buf;
  cudaMalloc(&buf, 64 << 20);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  struct Shape { int blocks, threads; const char* name; } shapes[] = {{1, 32, "1x32"}, {512, 96, "512x96"}, {128, 128, "128x128"}};
  for (const Shape& sh : shapes) {
    for (int rep = 0; rep < 2; ++rep) {
      const int total = 50000;
      for (int nodes : {1, 10, 200, 2000}) {
        const int replays = total / nodes;
        const float ms = run(sh.blocks, sh.threads, nodes, replays, buf, s);
        std::printf("%-8s nodes/graph %5d replays %6d: %.3f us per node, %.2f us per replay\n", sh.name, nodes, replays,
                    ms * 1000 / total, ms * 1000 / replays);
      }
    }
  }
  std::printf("status %s\n", cudaGetErrorString(cudaGetLastError()));
}
