// Row softmax, bf16 in / bf16 out, fp32 math: a row split over a thread-block CLUSTER (sm_90).
// VARIANT c8 of candidates/cuda_cluster: the device code is cuda_cluster's, unchanged; only the
// host's launch choice for grids of more than 2 x SMs CTAs differs (decode sizes and rows <= 1024
// wide launch exactly as cuda_cluster): there each CTA holds at most kWideCtaElems = 4096 elements
// (the cluster grown to get there), 8 vectors a thread: 64-thread CTAs (more threads only for rows
// wider than 8 x 4096, where the chunk cannot reach 4096). 4096 x 4096: unchanged
// (C = 1, 64-thread CTAs); 4096 x 32768: C = 8, 64-thread CTAs of 4096 elements (cuda_cluster:
// C = 2, 256 threads of 8 vectors), i.e. the per-CTA shape of the 4096 x 4096 launch, 12 CTAs per SM.
// Pure CUDA: no torch headers. THIS VARIANT IS NOT YET RUN ON A GPU (cuda_cluster itself ran once on an
// H100, session 22, every gate passed; this one is compiled for sm_90 with nvcc 13.0 only, and its
// partitioning checked by a CPU emulation against torch.softmax).
//
// Why: quack-kernels 0.6.5 reaches the copy roofline at 4096 x 32768 with a 2-CTA cluster per row
// (each CTA 256 threads, half a row in registers, per-warp (max, sum) pairs exchanged through
// distributed shared memory), and leads at decode sizes (1-64 rows) where one block per row leaves
// most SMs idle. This kernel takes the same structure and lets the host pick the cluster size from
// the shape: up to 8 CTAs (the portable maximum) per row when there are few rows.
//
// * Cluster path (every width the vector path below does not take; bf16 vectors of 8 when
//   width % 8 == 0 and both pointers are 16-byte aligned, else scalar bf16 loads): a cluster of C
//   CTAs per row (C = 1 means an ordinary launch: one CTA per row). CTA `rank` owns a contiguous
//   chunk of the row (chunk = ceil(width / C) rounded up to 64 elements, i.e. 128-byte lines; the
//   last CTA gets the remainder, possibly nothing), and each warp a contiguous segment of that
//   chunk (32 x VPT vectors; slot j of a lane at lane + 32 j, so every warp-wide load or store
//   covers 512 contiguous bytes (64 with scalar loads) and the offsets are compile-time). Each thread loads its VPT x 8
//   elements (VPT 16-byte vectors; slots past the chunk hold -inf) into fp32 registers: one read
//   of HBM. Then per warp: shuffle max m_w, in place e = exp2(x log2e - m_w log2e) (ex2.approx),
//   shuffle sum s_w. Lane r of every warp sends the warp's (m_w, s_w) into CTA r's shared memory
//   with st.async (distributed shared memory), which completes 8 bytes on CTA r's mbarrier; each
//   CTA waits on its own mbarrier for all C x W pairs (no cluster-wide barrier, no fence), and
//   every warp merges them: M = max m, S = sum s exp2((m - M) log2e). The output is
//   e exp2((m_w - M) log2e) / S from the registers, 16-byte stores: one write of HBM.
//   Synchronization: thread 0 initializes the mbarrier (arrival count 1, expect_tx C x W x 8
//   bytes, fence.mbarrier_init), then every thread arrives (relaxed) on the cluster barrier at
//   kernel start and waits on it just before its first remote store, so no st.async reaches a CTA
//   that has not started or initialized its mbarrier (the wait hides behind the loads). A CTA's
//   mbarrier completes only after every remote store into it has landed, so no shared memory is
//   touched remotely after that: a CTA may exit while the others still wait. No CTA returns early;
//   every thread of every CTA passes the one cluster barrier exactly once.
// * Vector path, width <= 1024 (width % 8 == 0, aligned): a group of kLanes lanes per row
//   (kLanes a power of two, 2-4 vectors per lane), 32 / kLanes rows per warp, 4 warps per block,
//   shuffle-only reductions.
//
// Host choice of C (softmax_launch): the smallest C with chunk <= kCtaElems (16384 elements:
// 256 threads x 64, quack's half of a 32K row), then doubled while rows * C < number of SMs and
// the chunks stay >= 512 elements (1 x 32000: C = 8; 32 x 32000: 8; 64 x 32768: 4;
// 4096 x 32768: 8; 4096 x 4096: 1). More CTAs than 2 x SMs (this variant): C grown until the chunk
// is <= 4096 elements, 8 vectors per thread (64-thread CTAs at both large workloads); otherwise 4
// (as cuda_cluster). blockDim = chunk / (8 VPT) rounded up to whole warps. ptxas (nvcc 13.0,
// sm_90, no spills): VPT 8 80 registers (launch bounds 256 x 3; twelve 64-thread CTAs per SM),
// VPT 4 48-56, the narrow-row kernels 32-48. A row that is all -inf gives NaN, like torch.softmax. Accuracy:
// ex2.approx (2 ulp) and rcp.approx on fp32, sums in fp32: well inside rtol 1.6e-2.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cooperative_groups.h>
#include <cstdint>
#include <math_constants.h>

namespace cg = cooperative_groups;

namespace {

// The two tunables.
constexpr int kMaxCluster = 8;     // largest cluster per row (8 is the portable maximum)
constexpr int kCtaElems = 16384;   // most elements one CTA holds (256 threads x 64 fp32 registers)

constexpr int kWideCtaElems = 4096;  // most elements one CTA holds when rows x C > 2 x SMs (this variant's change)
constexpr int kMinCtaElems = 512;  // a cluster is not grown below this many elements per CTA
constexpr int kChunkAlign = 64;    // CTA chunks start on 128-byte lines
constexpr float kLog2e = 1.4426950408889634f;
constexpr unsigned kNegInf2 = 0xFF80FF80u;  // two bf16 -inf
static_assert(kCtaElems <= 256 * 64, "the VPT = 8 kernel is bounded to 256 threads");
static_assert(kMaxCluster <= 8, "non-portable cluster sizes need cudaFuncAttributeNonPortableClusterSizeAllowed");

// Elements of a row each CTA of a cluster of C = 2^lg CTAs owns (the last one may own fewer, or none).
__host__ __device__ __forceinline__ int cta_chunk(int cols, int lg) {
  const int per = (cols + (1 << lg) - 1) >> lg;
  return (per + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
}

__device__ __forceinline__ float ex2(float x) {  // 2^x; -inf -> +0, NaN -> NaN
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ float rcp(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// mbarrier with one arrival (this call's) and `bytes` of transactions still to come; the init is
// fenced for the cluster (the remote st.async below may complete_tx on it after B1).
__device__ __forceinline__ void mbar_init_expect(uint64_t* bar, int bytes) {
  const uint32_t a = smem_addr(bar);
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(a) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(a), "r"(bytes) : "memory");
}

__device__ __forceinline__ void cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}

__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.aligned;" ::: "memory"); }

// (m, s) into the same slot of CTA `peer`'s shared memory; completes 8 bytes of its mbarrier.
__device__ __forceinline__ void store_remote_pair(float2* slot, uint64_t* bar, int peer, float m, float s) {
  uint32_t rslot, rbar;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rslot) : "r"(smem_addr(slot)), "r"(peer));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(rbar) : "r"(smem_addr(bar)), "r"(peer));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];"
               ::"r"(rslot), "f"(m), "f"(s), "r"(rbar) : "memory");
}

__device__ __forceinline__ void mbar_wait_phase0(uint64_t* bar) {
  const uint32_t a = smem_addr(bar);
  uint32_t done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n"
        " mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], 0;\n"
        " selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done) : "r"(a) : "memory");
  } while (!done);
}

template <int kWidth>
__device__ __forceinline__ float group_max(float v) {
#pragma unroll
  for (int o = kWidth / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <int kWidth>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int o = kWidth / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 p = __bfloat1622float2(h[k]);
    f[2 * k] = p.x;
    f[2 * k + 1] = p.y;
  }
}

__device__ __forceinline__ uint4 pack8_scaled(const float* f, float scale) {
  uint4 v;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v);
#pragma unroll
  for (int k = 0; k < 4; ++k) h[k] = __floats2bfloat162_rn(f[2 * k] * scale, f[2 * k + 1] * scale);
  return v;
}

// One row per cluster of C CTAs (grid = rows * C along x; C = 1 is a launch without a cluster).
// kVec: 16-byte loads (width % 8 == 0, aligned pointers), else scalar bf16 loads.
// Requires C a power of two, cta_chunk(cols, log2 C) <= VPT * 8 * blockDim.x and C * blockDim.x / 32 <= kMaxCluster * 32.
template <int VPT, bool kVec>
__global__ void __launch_bounds__(VPT >= 8 ? 256 : 512, VPT >= 8 ? 3 : 2)
softmax_cluster_kernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, int cols) {
  __shared__ float2 pairs[kMaxCluster * 32];  // (max, sum) of every warp of the cluster
  __shared__ alignas(8) uint64_t full;         // mbarrier: every pair of the cluster has landed
  const cg::cluster_group cluster = cg::this_cluster();
  const int C = static_cast<int>(cluster.num_blocks());
  const int rank = static_cast<int>(cluster.block_rank());
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  if (C > 1) {
    if (threadIdx.x == 0) {
      mbar_init_expect(&full, C * nwarps * static_cast<int>(sizeof(float2)));
    }
    cluster_arrive_relaxed();  // B1; its wait comes before the first remote store
  }

  const int lg = __ffs(C) - 1;  // C is a power of two
  const int64_t row = blockIdx.x >> lg;
  const int chunk = cta_chunk(cols, lg);
  const int begin = min(cols, rank * chunk);
  const int end = min(cols, begin + chunk);
  const __nv_bfloat16* xr = x + row * cols;
  __nv_bfloat16* yr = y + row * cols;

  // Each warp owns a contiguous segment of the chunk (32 * VPT vectors, or 32 * VPT * 8 scalars);
  // slot j of a lane is at lane + 32 * j in it: one base pointer, compile-time offsets, and every
  // load / store instruction of a warp covers 512 contiguous bytes (64 for scalars).
  float v[VPT][8];
  if constexpr (kVec) {
    const int first = (begin >> 3) + warp * 32 * VPT + lane, left = (end >> 3) - first;
    const uint4* xv = reinterpret_cast<const uint4*>(xr) + first;
    uint4 raw[VPT];
#pragma unroll
    for (int j = 0; j < VPT; ++j)
      raw[j] = 32 * j < left ? __ldcs(xv + 32 * j) : make_uint4(kNegInf2, kNegInf2, kNegInf2, kNegInf2);
#pragma unroll
    for (int j = 0; j < VPT; ++j) unpack8(raw[j], v[j]);
  } else {
    const int first = begin + warp * 256 * VPT + lane, left = end - first;
#pragma unroll
    for (int j = 0; j < VPT; ++j)
#pragma unroll
      for (int k = 0; k < 8; ++k)
        v[j][k] = 32 * (8 * j + k) < left ? __bfloat162float(xr[first + 32 * (8 * j + k)]) : -CUDART_INF_F;
  }

  // Warp partial: max, then exp relative to it and the sum.
  float m = -CUDART_INF_F;
#pragma unroll
  for (int j = 0; j < VPT; ++j)
#pragma unroll
    for (int k = 0; k < 8; ++k) m = fmaxf(m, v[j][k]);
  m = group_max<32>(m);
  const float mL = (m == -CUDART_INF_F) ? 0.f : m * kLog2e;  // a warp of -inf only: e = 0
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < VPT; ++j)
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      v[j][k] = ex2(fmaf(v[j][k], kLog2e, -mL));
      s += v[j][k];
    }
  s = group_sum<32>(s);

  // Every warp's pair into every CTA's `pairs` (slot rank * nwarps + warp): lane r stores it into
  // CTA r with st.async, which counts its bytes on CTA r's `full` mbarrier.
  if (C > 1) {
    cluster_wait();  // B1: every CTA of the cluster has started and initialized `full`
    if (lane < C) store_remote_pair(&pairs[rank * nwarps + warp], &full, lane, m, s);
    mbar_wait_phase0(&full);  // all C * nwarps pairs are here
  } else {
    if (lane == 0) pairs[warp] = make_float2(m, s);
    __syncthreads();
  }

  // Row max and sum from the C * nwarps pairs (each warp redundantly: no further barrier).
  const int np = C * nwarps;
  float M = -CUDART_INF_F;
#pragma unroll 1
  for (int p = lane; p < np; p += 32) M = fmaxf(M, pairs[p].x);
  M = group_max<32>(M);
  const float ML = M * kLog2e;  // M = -inf only for a row of -inf: NaN below, as torch.softmax
  float S = 0.f;
#pragma unroll 1
  for (int p = lane; p < np; p += 32) {
    const float2 q = pairs[p];
    S += q.y * ex2(fmaf(q.x, kLog2e, -ML));
  }
  S = group_sum<32>(S);
  const float scale = ex2(fmaf(m, kLog2e, -ML)) * rcp(S);

  if constexpr (kVec) {
    const int first = (begin >> 3) + warp * 32 * VPT + lane, left = (end >> 3) - first;
    uint4* yv = reinterpret_cast<uint4*>(yr) + first;
#pragma unroll
    for (int j = 0; j < VPT; ++j)
      if (32 * j < left) __stcs(yv + 32 * j, pack8_scaled(v[j], scale));
  } else {
    const int first = begin + warp * 256 * VPT + lane, left = end - first;
#pragma unroll
    for (int j = 0; j < VPT; ++j)
#pragma unroll
      for (int k = 0; k < 8; ++k)
        if (32 * (8 * j + k) < left) yr[first + 32 * (8 * j + k)] = __float2bfloat16_rn(v[j][k] * scale);
  }
}

// Narrow rows: kLanes lanes per row, kVecs 16-byte vectors per lane, 32 / kLanes rows per warp,
// 4 warps per block. Requires width % 8 == 0, aligned pointers, width / 8 <= kLanes * kVecs.
template <int kLanes, int kVecs>
__global__ void __launch_bounds__(128)
softmax_rows_kernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, int rows, int cols) {
  constexpr int kRowsPerWarp = 32 / kLanes;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t row0 = (static_cast<int64_t>(blockIdx.x) * 4 + warp) * kRowsPerWarp;
  if (row0 >= rows) return;  // whole warp leaves; no block-level barrier below
  const int sub = lane % kLanes;
  const int64_t row = row0 + lane / kLanes;
  const bool ok = row < rows;  // a partial last warp: idle groups still join the shuffles
  const int nvec = cols >> 3;
  const uint4* xv = reinterpret_cast<const uint4*>(x + (ok ? row : row0) * cols);
  uint4* yv = reinterpret_cast<uint4*>(y + (ok ? row : row0) * cols);

  uint4 raw[kVecs];
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int i = sub + j * kLanes;
    raw[j] = (ok && i < nvec) ? __ldcs(xv + i) : make_uint4(kNegInf2, kNegInf2, kNegInf2, kNegInf2);
  }
  float v[kVecs][8];
#pragma unroll
  for (int j = 0; j < kVecs; ++j) unpack8(raw[j], v[j]);
  float m = -CUDART_INF_F;
#pragma unroll
  for (int j = 0; j < kVecs; ++j)
#pragma unroll
    for (int k = 0; k < 8; ++k) m = fmaxf(m, v[j][k]);
  m = group_max<kLanes>(m);
  const float mL = (m == -CUDART_INF_F) ? 0.f : m * kLog2e;  // row of -inf: 0 / 0 = NaN, as torch
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kVecs; ++j)
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      v[j][k] = ex2(fmaf(v[j][k], kLog2e, -mL));
      s += v[j][k];
    }
  const float inv = rcp(group_sum<kLanes>(s));
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const int i = sub + j * kLanes;
    if (ok && i < nvec) __stcs(yv + i, pack8_scaled(v[j], inv));
  }
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

template <int kLanes, int kVecs>
cudaError_t launch_rows(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols, cudaStream_t stream) {
  constexpr int kRowsPerBlock = 4 * (32 / kLanes);
  const int blocks = static_cast<int>((static_cast<int64_t>(rows) + kRowsPerBlock - 1) / kRowsPerBlock);
  softmax_rows_kernel<kLanes, kVecs><<<blocks, 128, 0, stream>>>(x, y, rows, cols);
  return cudaGetLastError();
}

template <int VPT, bool kVec>
cudaError_t launch_cluster(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols, int c,
                           int threads, cudaStream_t stream) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(static_cast<int64_t>(rows) * c), 1, 1);
  cfg.blockDim = dim3(static_cast<unsigned>(threads), 1, 1);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(c);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = c > 1 ? 1 : 0;
  const cudaError_t err = cudaLaunchKernelEx(&cfg, softmax_cluster_kernel<VPT, kVec>, x, y, cols);
  return err != cudaSuccess ? err : cudaGetLastError();
}

// Multiprocessors of `device`, asked once per device.
int sm_count_of(int device) {
  static int cached[64] = {};
  if (device < 0 || device >= 64) return 132;
  if (cached[device] == 0) {
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || n <= 0) n = 132;
    cached[device] = n;
  }
  return cached[device];
}

}  // namespace

// x, y: [rows, cols] row-major contiguous on CUDA device `device`. Launches on `stream`; returns
// the launch's error. cols <= kMaxCluster * kCtaElems (131072).
cudaError_t softmax_launch(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols, int device,
                           cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const int sm_count = sm_count_of(device);
  const bool vec = (cols % 8 == 0) && aligned16(x) && aligned16(y);
  if (vec && cols <= 1024) {
    const int nvec = cols / 8;
    if (nvec > 64) return launch_rows<32, 4>(x, y, rows, cols, stream);
    if (nvec > 32) return launch_rows<32, 2>(x, y, rows, cols, stream);
    if (nvec > 16) return launch_rows<16, 2>(x, y, rows, cols, stream);
    if (nvec > 8) return launch_rows<8, 2>(x, y, rows, cols, stream);
    if (nvec > 4) return launch_rows<4, 2>(x, y, rows, cols, stream);
    if (nvec > 2) return launch_rows<2, 2>(x, y, rows, cols, stream);
    return launch_rows<1, 2>(x, y, rows, cols, stream);
  }
  int lg = 0;  // cluster of c = 2^lg CTAs per row
  while ((1 << lg) < kMaxCluster && cta_chunk(cols, lg) > kCtaElems) ++lg;
  if (cta_chunk(cols, lg) > kCtaElems) return cudaErrorInvalidValue;  // wider than the definition allows
  while ((1 << lg) < kMaxCluster && (static_cast<int64_t>(rows) << lg) < sm_count &&
         cta_chunk(cols, lg + 1) >= kMinCtaElems)
    ++lg;
  // More CTAs than 2 x SMs (so the growth loop above did not run): the wide-grid choice below;
  // otherwise (decode sizes) C as above and 4 vectors a thread, exactly as cuda_cluster.
  const bool wide_grid = (static_cast<int64_t>(rows) << lg) > 2 * static_cast<int64_t>(sm_count);
  int vpt = 4;
  if (wide_grid) {  // many rows: CTAs of at most kWideCtaElems (64 threads of 8 vectors), the cluster grown to get there
    while ((1 << lg) < kMaxCluster && cta_chunk(cols, lg) > kWideCtaElems) ++lg;
    vpt = 8;
  }
  const int c = 1 << lg;
  const int per_thread = vpt * 8;
  int threads = (cta_chunk(cols, lg) + per_thread - 1) / per_thread;
  threads = (threads + 31) / 32 * 32;
  if (vpt == 8) {
    return vec ? launch_cluster<8, true>(x, y, rows, cols, c, threads, stream)
               : launch_cluster<8, false>(x, y, rows, cols, c, threads, stream);
  }
  return vec ? launch_cluster<4, true>(x, y, rows, cols, c, threads, stream)
             : launch_cluster<4, false>(x, y, rows, cols, c, threads, stream);
}
