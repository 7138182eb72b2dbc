// motionkit fused operators: coarse-to-fine sequences in time (motionkit.body.multiscale), the per-element
// math shared by the CPU (C++) and CUDA implementations.
//
// One problem's sequence is out[m, c] = sum_e weight[m, e, c'] params[index[m, e], c] over the 1 + 2L
// entries e that frame m reads (its own value, then two knots per level); c' = c, or 0 when the weight
// has one channel. The backward pass gathers instead of scattering: entry n of the parameters sums the
// gradients of the frames that read it, listed in CSR form (reader_ptr[n] .. reader_ptr[n + 1] into
// readers, each r = m E + e), so that CPU and GPU sum in the same order and no atomics are needed.
#pragma once

#include <cstdint>

#include "mk_math.h"

namespace mk {

// out[m, c] of one problem; params (N, C), index (M, E), weight (M, E, Cw). Entries outside [0, N) are skipped.
template <typename T>
MK_HD T knot_sequence_element(const T* params, const int64_t* index, const T* weight, int64_t m, int64_t c, int E,
                              int64_t N, int64_t C, int64_t Cw) {
  T s = 0;
  for (int e = 0; e < E; ++e) {
    const int64_t n = index[m * E + e];
    if (n < 0 || n >= N) continue;
    s += weight[(m * E + e) * Cw + (Cw == 1 ? 0 : c)] * params[n * C + c];
  }
  return s;
}

// d loss / d params[n, c] of one problem from grad (M, C) = d loss / d out.
template <typename T>
MK_HD T knot_sequence_backward_element(const T* grad, const int64_t* readers, const int64_t* reader_ptr,
                                       const T* weight, int64_t n, int64_t c, int E, int64_t C, int64_t Cw) {
  T s = 0;
  for (int64_t k = reader_ptr[n]; k < reader_ptr[n + 1]; ++k) {
    const int64_t r = readers[k];
    s += weight[r * Cw + (Cw == 1 ? 0 : c)] * grad[(r / E) * C + c];
  }
  return s;
}

// Row versions, the CPU's implementation (a frame's or an entry's C channels at once, contiguous inner
// loops; the element versions above are the CUDA implementation, one thread per channel, whose
// register accumulator a row loop would lose). Per channel both add in the same order, so CPU and
// CUDA differ only where the compiler fuses a multiply-add; the CUDA parity test holds them together.
template <typename T>
inline void knot_sequence_row(const T* params, const int64_t* index, const T* weight, int64_t m, int E, int64_t N,
                              int64_t C, int64_t Cw, T* out) {
  for (int64_t c = 0; c < C; ++c) out[c] = 0;
  for (int e = 0; e < E; ++e) {
    const int64_t n = index[m * E + e];
    if (n < 0 || n >= N) continue;
    const T* w = weight + (m * E + e) * Cw;
    const T* x = params + n * C;
    if (Cw == 1)
      for (int64_t c = 0; c < C; ++c) out[c] += w[0] * x[c];
    else
      for (int64_t c = 0; c < C; ++c) out[c] += w[c] * x[c];
  }
}

template <typename T>
inline void knot_sequence_backward_row(const T* grad, const int64_t* readers, const int64_t* reader_ptr,
                                       const T* weight, int64_t n, int E, int64_t C, int64_t Cw, T* out) {
  for (int64_t c = 0; c < C; ++c) out[c] = 0;
  for (int64_t k = reader_ptr[n]; k < reader_ptr[n + 1]; ++k) {
    const int64_t r = readers[k];
    const T* w = weight + r * Cw;
    const T* g = grad + (r / E) * C;
    if (Cw == 1)
      for (int64_t c = 0; c < C; ++c) out[c] += w[0] * g[c];
    else
      for (int64_t c = 0; c < C; ++c) out[c] += w[c] * g[c];
  }
}

}  // namespace mk
