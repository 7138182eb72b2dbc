// motionkit fused operators: the per-item math shared by the CPU (C++) and CUDA implementations.
//
// Every function here works on one frame (or one camera observation) with plain pointers, so that the
// CPU operator (a parallel loop over frames) and the CUDA operator (one thread per frame) run the very
// same code. Conventions are those of the torch reference path (docs/kernels.md):
//   * 6D rotation: the first two columns (a1, a2) of a 3x3 matrix, row-major (3, 2) storage;
//     R = [b1 b2 b1 x b2] by Gram-Schmidt (roma.special_gramschmidt);
//   * 3x3 matrices row-major; rotation vectors from the shortest-arc unit quaternion (roma);
//   * KB3 fisheye: params fx, fy, cx, cy, k0..k3 (motionkit.geometry.fisheye).
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define MK_HD __host__ __device__ __forceinline__
#else
#define MK_HD inline
#endif

namespace mk {

using std::atan2;
using std::isfinite;
using std::sqrt;

constexpr int kMaxJoints = 64;     // kinematic joints (SMPL-X: 55)
constexpr int kMaxRotated = 24;    // joints with a free rotation (SMPL-X fit: global + 21 body joints)
constexpr int kMaxBetas = 16;      // shape coefficients

// Geman-McClure of a squared residual r2 with scale s2 = sigma^2, divided by s2 (motionkit.geometry.robust.gmof):
// r2 / (s2 + r2); and a times its derivative in r2, a s2 / (s2 + r2)^2 (a: the chain rule's factor, first so
// that the product rounds as written out before)
template <typename T>
MK_HD T gmof(T r2, T s2) {
  return r2 / (s2 + r2);
}

template <typename T>
MK_HD T gmof_grad(T a, T r2, T s2) {
  const T q = s2 + r2;
  return a * s2 / (q * q);
}

template <typename T>
MK_HD T dot3(const T* a, const T* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

template <typename T>
MK_HD void cross3(const T* a, const T* b, T* out) {
  out[0] = a[1] * b[2] - a[2] * b[1];
  out[1] = a[2] * b[0] - a[0] * b[2];
  out[2] = a[0] * b[1] - a[1] * b[0];
}

// C = A B (3x3, row-major)
template <typename T>
MK_HD void matmul3(const T* A, const T* B, T* C) {
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}

// y = A x, y = A^T x
template <typename T>
MK_HD void matvec3(const T* A, const T* x, T* y) {
  for (int i = 0; i < 3; ++i) y[i] = A[3 * i] * x[0] + A[3 * i + 1] * x[1] + A[3 * i + 2] * x[2];
}
template <typename T>
MK_HD void matTvec3(const T* A, const T* x, T* y) {
  for (int i = 0; i < 3; ++i) y[i] = A[i] * x[0] + A[3 + i] * x[1] + A[6 + i] * x[2];
}

// ------------------------------------------------------------------------------------------ 6D rotations
// r6 (3, 2) row-major: column c of row i at r6[2 * i + c].
// The Gram-Schmidt steps: a2 = second column, b1 = a1 / n1, d = b1 . a2, b2 = (a2 - d b1) / n2.
template <typename T>
struct GramSchmidt {
  T a2[3], b1[3], b2[3], n1, n2, d;
};

template <typename T>
MK_HD GramSchmidt<T> gram_schmidt_steps(const T* r6) {
  GramSchmidt<T> g;
  T a1[3] = {r6[0], r6[2], r6[4]};
  for (int i = 0; i < 3; ++i) g.a2[i] = r6[2 * i + 1];
  g.n1 = sqrt(dot3(a1, a1));
  for (int i = 0; i < 3; ++i) g.b1[i] = a1[i] / g.n1;
  g.d = dot3(g.b1, g.a2);
  T u2[3] = {g.a2[0] - g.d * g.b1[0], g.a2[1] - g.d * g.b1[1], g.a2[2] - g.d * g.b1[2]};
  g.n2 = sqrt(dot3(u2, u2));
  for (int i = 0; i < 3; ++i) g.b2[i] = u2[i] / g.n2;
  return g;
}

template <typename T>
MK_HD void gram_schmidt(const T* r6, T* R) {
  const GramSchmidt<T> g = gram_schmidt_steps(r6);
  T b3[3];
  cross3(g.b1, g.b2, b3);
  for (int i = 0; i < 3; ++i) {
    R[3 * i] = g.b1[i];
    R[3 * i + 1] = g.b2[i];
    R[3 * i + 2] = b3[i];
  }
}

// gradient of a loss w.r.t. r6 (accumulated into g6) given its gradient gR w.r.t. R = gram_schmidt(r6)
template <typename T>
MK_HD void gram_schmidt_backward(const T* r6, const T* gR, T* g6) {
  const GramSchmidt<T> g = gram_schmidt_steps(r6);
  const T *a2 = g.a2, *b1 = g.b1, *b2 = g.b2;
  const T n1 = g.n1, n2 = g.n2, d = g.d;
  T gb1[3] = {gR[0], gR[3], gR[6]}, gb2[3] = {gR[1], gR[4], gR[7]}, gb3[3] = {gR[2], gR[5], gR[8]};
  T t[3];
  cross3(b2, gb3, t);  // b3 = b1 x b2: d/db1 = b2 x g, d/db2 = g x b1
  for (int i = 0; i < 3; ++i) gb1[i] += t[i];
  cross3(gb3, b1, t);
  for (int i = 0; i < 3; ++i) gb2[i] += t[i];
  T p = dot3(b2, gb2);  // b2 = u2 / |u2|
  T gu2[3] = {(gb2[0] - p * b2[0]) / n2, (gb2[1] - p * b2[1]) / n2, (gb2[2] - p * b2[2]) / n2};
  T q = dot3(b1, gu2);  // u2 = a2 - (b1 . a2) b1
  T ga2[3] = {gu2[0] - q * b1[0], gu2[1] - q * b1[1], gu2[2] - q * b1[2]};
  for (int i = 0; i < 3; ++i) gb1[i] -= d * gu2[i] + q * a2[i];
  T s = dot3(b1, gb1);  // b1 = a1 / |a1|
  for (int i = 0; i < 3; ++i) {
    g6[2 * i] += (gb1[i] - s * b1[i]) / n1;
    g6[2 * i + 1] += ga2[i];
  }
}

// ------------------------------------------------------------------------------------------ rotation vectors
// Shepperd's method: the largest of (w, x, y, z) is taken from the diagonal, the others from sums of
// off-diagonal pairs. Table per branch: sign of R00, R11, R22 under the square root, then for each of
// the three other components (index in xyzw) the two entries and the sign of the second.
struct QuatBranch {
  signed char diag[3];
  signed char primary;
  signed char other[3];
  signed char a[3], b[3], sb[3];
};

MK_HD QuatBranch quat_branch(int k) {
  // k: 0 = x, 1 = y, 2 = z, 3 = w is the largest
  QuatBranch br;
  if (k == 3) {
    br = {{1, 1, 1}, 3, {0, 1, 2}, {7, 2, 3}, {5, 6, 1}, {-1, -1, -1}};
  } else if (k == 0) {
    br = {{1, -1, -1}, 0, {3, 1, 2}, {7, 1, 2}, {5, 3, 6}, {-1, 1, 1}};
  } else if (k == 1) {
    br = {{-1, 1, -1}, 1, {3, 0, 2}, {2, 1, 5}, {6, 3, 7}, {-1, 1, 1}};
  } else {
    br = {{-1, -1, 1}, 2, {3, 0, 1}, {3, 2, 5}, {1, 6, 7}, {-1, 1, 1}};
  }
  return br;
}

template <typename T>
MK_HD int quat_branch_index(const T* R) {
  T tr = R[0] + R[4] + R[8];
  int k = 3;
  T best = tr;
  if (R[0] > best) { k = 0; best = R[0]; }
  if (R[4] > best) { k = 1; best = R[4]; }
  if (R[8] > best) { k = 2; }
  return k;
}

// R (3x3) -> quaternion q (x, y, z, w) by Shepperd's branch br; returns the primary component p
template <typename T>
MK_HD T rotmat_to_quat(const T* R, const QuatBranch& br, T* q) {
  T dsum = 1 + br.diag[0] * R[0] + br.diag[1] * R[4] + br.diag[2] * R[8];
  T p = T(0.5) * sqrt(dsum);
  q[br.primary] = p;
  for (int i = 0; i < 3; ++i) q[br.other[i]] = (R[br.a[i]] + br.sb[i] * R[br.b[i]]) / (4 * p);
  return p;
}

// R (3x3) -> rotation vector (3), shortest arc
template <typename T>
MK_HD void rotmat_to_rotvec(const T* R, T* rv) {
  QuatBranch br = quat_branch(quat_branch_index(R));
  T q[4];
  rotmat_to_quat(R, br, q);
  T sgn = q[3] < 0 ? T(-1) : T(1);
  T v[3] = {sgn * q[0], sgn * q[1], sgn * q[2]}, w = sgn * q[3];
  T n = sqrt(dot3(v, v));
  T k = n > T(1e-7) ? T(2) * atan2(n, w) / n : T(2) / w;
  for (int i = 0; i < 3; ++i) rv[i] = k * v[i];
}

// accumulate into gRacc the gradient w.r.t. R given grv w.r.t. rotmat_to_rotvec(R)
template <typename T>
MK_HD void rotmat_to_rotvec_backward(const T* R, const T* grv, T* gRacc) {
  QuatBranch br = quat_branch(quat_branch_index(R));
  T q[4];
  const T p = rotmat_to_quat(R, br, q);
  T sgn = q[3] < 0 ? T(-1) : T(1);
  T v[3] = {sgn * q[0], sgn * q[1], sgn * q[2]}, w = sgn * q[3];
  T n = sqrt(dot3(v, v));
  T gq[4];
  T gv = dot3(grv, v);
  if (n > T(1e-7)) {
    T th = T(2) * atan2(n, w);
    T k = th / n, den = n * n + w * w;
    T dk_dn = (T(2) * w / den * n - th) / (n * n);
    T dk_dw = T(-2) / den;
    for (int i = 0; i < 3; ++i) gq[i] = k * grv[i] + gv * dk_dn * v[i] / n;
    gq[3] = gv * dk_dw;
  } else {
    for (int i = 0; i < 3; ++i) gq[i] = T(2) / w * grv[i];
    gq[3] = -T(2) / (w * w) * gv;
  }
  for (int i = 0; i < 4; ++i) gq[i] *= sgn;
  // others q_o = n_o / (4 p): d/dn_o = 1 / (4 p), d/dp = -n_o / (4 p^2) = -q_o / p
  T gp = gq[br.primary];
  for (int i = 0; i < 3; ++i) {
    int o = br.other[i];
    T g = gq[o] / (4 * p);
    gRacc[br.a[i]] += g;
    gRacc[br.b[i]] += br.sb[i] * g;
    gp -= gq[o] * q[o] / p;
  }
  T gd = gp / (8 * p);  // p = sqrt(dsum) / 2
  gRacc[0] += br.diag[0] * gd;
  gRacc[4] += br.diag[1] * gd;
  gRacc[8] += br.diag[2] * gd;
}

// ------------------------------------------------------------------------------------------ Adam
// One element of torch's Adam (no weight decay, no amsgrad): moments m, v updated in place, then the
// parameter. bc1 = 1 - beta1^step, bc2 = 1 - beta2^step. Plain arithmetic, the same for every element
// wherever it sits in the tensor (no fused multiply-adds that a vector body would use and a tail not).
template <typename T>
MK_HD void adam_element(T* p, T* m, T* v, T g, T lr, T beta1, T beta2, T eps, T bc1, T bc2) {
  const T mm = *m + (g - *m) * (T(1) - beta1);
  const T vv = *v * beta2 + g * g * (T(1) - beta2);
  *m = mm;
  *v = vv;
  *p -= (lr / bc1) * mm / (sqrt(vv) / sqrt(bc2) + eps);
}

// ------------------------------------------------------------------------------------------ KB3 projection
template <typename T>
MK_HD T kb3_distort(T th, const T* k) {
  T t2 = th * th;
  return th * (1 + t2 * (k[0] + t2 * (k[1] + t2 * (k[2] + t2 * k[3]))));
}
template <typename T>
MK_HD T kb3_distort_derivative(T th, const T* k) {
  T t2 = th * th;
  return 1 + t2 * (3 * k[0] + t2 * (5 * k[1] + t2 * (7 * k[2] + t2 * 9 * k[3])));
}

// camera-frame point pc -> pixel uv; jac (2x3, row-major) if not null; returns validity
template <typename T>
MK_HD bool kb3_project(const T* pc, const T* prm, T theta_max, T* uv, T* jac) {
  T x = pc[0], y = pc[1], z = pc[2];
  T r2 = x * x + y * y;
  bool near_axis = r2 <= (T(1e-9) * z) * (T(1e-9) * z);
  T r = near_axis ? T(1) : sqrt(r2);
  T th = atan2(r, z);
  T rd = kb3_distort(th, prm + 4);
  T zs = z != T(0) ? z : T(1);
  T s = near_axis ? T(1) / zs : rd / r;
  uv[0] = prm[0] * s * x + prm[2];
  uv[1] = prm[1] * s * y + prm[3];
  if (jac != nullptr) {
    T ds[3];
    if (near_axis) {
      ds[0] = 0;
      ds[1] = 0;
      ds[2] = -T(1) / (zs * zs);
    } else {
      T rho2 = r2 + z * z;
      T drd = kb3_distort_derivative(th, prm + 4);
      T c = drd / r;
      ds[0] = c * (z * x / (r * rho2)) - rd * x / (r * r2);
      ds[1] = c * (z * y / (r * rho2)) - rd * y / (r * r2);
      ds[2] = c * (-r / rho2);
    }
    jac[0] = prm[0] * (s + x * ds[0]);
    jac[1] = prm[0] * x * ds[1];
    jac[2] = prm[0] * x * ds[2];
    jac[3] = prm[1] * y * ds[0];
    jac[4] = prm[1] * (s + y * ds[1]);
    jac[5] = prm[1] * y * ds[2];
  }
  return th < theta_max && z > 0;
}

}  // namespace mk
