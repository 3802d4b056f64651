// What four launches cost the host, against one CUDA graph of the same four kernels.
//
// Build and run on the GPU machine:
//   nvcc -O2 -o /tmp/graph_launch experiments/graph_launch.cu -lcuda && /tmp/graph_launch
//
// A reduction by offsets past 64 MiB (rts) is four launches: the offsets' pre-pass, the
// tile pass, the spine and the fix-up. Each is a cuLaunchKernel of the driver's. This
// times, per call (median over 2,000 calls, a synchronization every 20, not timed), on
// the legacy default stream and on a stream of its own:
//   - one cuLaunchKernel, and four back to back (8 arguments each, as the stages have);
//   - cuGraphLaunch of an instantiated graph of the four as a chain, its arguments fixed;
//   - the same after cuGraphExecKernelNodeSetParams of each node (a call's new arrays).
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

extern "C" __global__ void stage(int *p, unsigned long long n, int *q, unsigned a, unsigned b, int *r,
                                 unsigned long long c, unsigned d)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = p[i] + (int)(a + b + d) + (q ? 0 : 1) + (r ? 0 : 1) + (int)c;
}

#define CK(x)                                                                  \
    do {                                                                       \
        CUresult e_ = (x);                                                     \
        if (e_ != CUDA_SUCCESS) {                                              \
            const char *s;                                                     \
            cuGetErrorString(e_, &s);                                          \
            std::printf("%s failed: %s (line %d)\n", #x, s, __LINE__);         \
            return 1;                                                          \
        }                                                                      \
    } while (0)

using clk = std::chrono::steady_clock;

template <class F> static double per_call_us(F f, CUstream s)
{
    std::vector<double> t;
    for (int i = 0; i < 2000; ++i) {
        auto a = clk::now();
        f(i);
        auto b = clk::now();
        t.push_back(std::chrono::duration<double, std::micro>(b - a).count());
        if (i % 20 == 19)
            cuStreamSynchronize(s);
    }
    cuStreamSynchronize(s);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main()
{
    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CUfunction fn;
    {
        cudaFunction_t rf;  // the runtime's handle of the kernel in this file, as the driver's
        cudaGetFuncBySymbol(&rf, (const void *)stage);
        fn = (CUfunction)rf;
    }
    const unsigned long long n = 1 << 10;
    CUdeviceptr buf[2];
    CK(cuMemAlloc(&buf[0], n * 4));
    CK(cuMemAlloc(&buf[1], n * 4));
    CUstream own;
    CK(cuStreamCreate(&own, CU_STREAM_NON_BLOCKING));
    CUstream streams[2] = {0, own};
    const char *names[2] = {"default stream", "own stream"};
    for (int si = 0; si < 2; ++si) {
        CUstream s = streams[si];
        // each launch's arguments, 8 of them, as a stage's
        struct Args {
            CUdeviceptr p, q, r;
            unsigned long long n, c;
            unsigned a, b, d;
            void *params[8];
        } args[4];
        for (int k = 0; k < 4; ++k) {
            Args &g = args[k];
            g.p = buf[0];
            g.q = buf[1];
            g.r = buf[1];
            g.n = n;
            g.c = k;
            g.a = 1;
            g.b = 2;
            g.d = 3;
            void *pp[8] = {&g.p, &g.n, &g.q, &g.a, &g.b, &g.r, &g.c, &g.d};
            std::copy(pp, pp + 8, g.params);
        }
        unsigned grid = (unsigned)((n + 127) / 128);
        double one = per_call_us(
            [&](int) { cuLaunchKernel(fn, grid, 1, 1, 128, 1, 1, 0, s, args[0].params, nullptr); }, s);
        double four = per_call_us(
            [&](int i) {
                for (int k = 0; k < 4; ++k) {
                    args[k].p = buf[i & 1];
                    cuLaunchKernel(fn, grid, 1, 1, 128, 1, 1, 0, s, args[k].params, nullptr);
                }
            },
            s);
        CUgraph g;
        CK(cuGraphCreate(&g, 0));
        CUgraphNode nodes[4];
        CUDA_KERNEL_NODE_PARAMS kp[4];
        for (int k = 0; k < 4; ++k) {
            kp[k] = {};
            kp[k].func = fn;
            kp[k].gridDimX = grid;
            kp[k].gridDimY = kp[k].gridDimZ = 1;
            kp[k].blockDimX = 128;
            kp[k].blockDimY = kp[k].blockDimZ = 1;
            kp[k].kernelParams = args[k].params;
            CK(cuGraphAddKernelNode(&nodes[k], g, k ? &nodes[k - 1] : nullptr, k ? 1 : 0, &kp[k]));
        }
        CUgraphExec ge;
        CK(cuGraphInstantiate(&ge, g, 0));
        CK(cuGraphUpload(ge, s));
        double graph = per_call_us([&](int) { cuGraphLaunch(ge, s); }, s);
        double updated = per_call_us(
            [&](int i) {
                for (int k = 0; k < 4; ++k) {
                    args[k].p = buf[i & 1];
                    cuGraphExecKernelNodeSetParams(ge, nodes[k], &kp[k]);
                }
                cuGraphLaunch(ge, s);
            },
            s);
        double update_one = per_call_us(
            [&](int i) {
                args[0].p = buf[i & 1];
                cuGraphExecKernelNodeSetParams(ge, nodes[0], &kp[0]);
                cuGraphLaunch(ge, s);
            },
            s);
        std::printf("%s: one launch %.2f us, four launches %.2f, graph of four %.2f, "
                    "graph after four updates %.2f, after one update %.2f\n",
                    names[si], one, four, graph, updated, update_one);
        cuGraphExecDestroy(ge);
        cuGraphDestroy(g);
    }
    int driver;
    cuDriverGetVersion(&driver);
    std::printf("driver API %d\n", driver);
    return 0;
}
