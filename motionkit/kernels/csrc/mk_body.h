// motionkit fused operators: SMPL-X joints and vertex landmarks of one frame, forward and backward
// (shared by the CPU and CUDA implementations; see mk_math.h for the conventions).
//
// Joints: forward kinematics of the shaped rest joints J(beta) = J_template + J_shapedirs beta, with free
// rotations (6D) for joints 0..R-1 (global orientation and the 21 body joints) and identity local rotations
// for the others (jaw, eyes, hands). Landmarks: linear blend skinning of the landmark vertices
// v = template + shapedirs beta + posedirs (R_local - I) for joints 1..R-1.
#pragma once

#include <cstdint>

#include "mk_math.h"

namespace mk {

template <typename T>
struct BodyData {
  const T* J_template;    // (J, 3)
  const T* J_shapedirs;   // (J, 3, B)
  const T* kp_template;   // (K, 3)
  const T* kp_shapedirs;  // (K, 3, B)
  const T* kp_posedirs;   // (>= (R - 1) * 9, Kp * 3): pose feature -> offsets of the first Kp landmarks
  const T* kp_weights;    // (K, J) skinning weights
  const int64_t* parents; // (J,), parents[j] < j
  int J, K, B, R;
  int Kp;  // landmarks 0..Kp-1 have pose correctives (vertices); the others are rigid (joint landmarks)
};

// per-frame state of the forward pass (in registers / local memory)
template <typename T>
struct BodyFrame {
  T Rl[kMaxRotated * 9];  // local rotations
  T Jrest[kMaxJoints * 3];
  T GR[kMaxJoints * 9];   // global rotations
  T Gt[kMaxJoints * 3];   // global joint positions (without translation)
  T At[kMaxJoints * 3];   // LBS offsets Gt - GR Jrest
};

template <typename T>
MK_HD void body_frame_state(const BodyData<T>& d, const T* r6, const T* betas, BodyFrame<T>& f) {
  for (int j = 0; j < d.R; ++j) gram_schmidt(r6 + 6 * j, f.Rl + 9 * j);
  for (int j = 0; j < d.J; ++j)
    for (int c = 0; c < 3; ++c) {
      T s = d.J_template[3 * j + c];
      const T* sd = d.J_shapedirs + (3 * j + c) * d.B;
      for (int b = 0; b < d.B; ++b) s += sd[b] * betas[b];
      f.Jrest[3 * j + c] = s;
    }
  for (int e = 0; e < 9; ++e) f.GR[e] = f.Rl[e];
  for (int c = 0; c < 3; ++c) f.Gt[c] = f.Jrest[c];
  for (int j = 1; j < d.J; ++j) {
    const int p = static_cast<int>(d.parents[j]);
    const T* GRp = f.GR + 9 * p;
    if (j < d.R) {
      matmul3(GRp, f.Rl + 9 * j, f.GR + 9 * j);
    } else {
      for (int e = 0; e < 9; ++e) f.GR[9 * j + e] = GRp[e];
    }
    T rel[3] = {f.Jrest[3 * j] - f.Jrest[3 * p], f.Jrest[3 * j + 1] - f.Jrest[3 * p + 1],
                f.Jrest[3 * j + 2] - f.Jrest[3 * p + 2]};
    T o[3];
    matvec3(GRp, rel, o);
    for (int c = 0; c < 3; ++c) f.Gt[3 * j + c] = f.Gt[3 * p + c] + o[c];
  }
  for (int j = 0; j < d.J; ++j) {
    T o[3];
    matvec3(f.GR + 9 * j, f.Jrest + 3 * j, o);
    for (int c = 0; c < 3; ++c) f.At[3 * j + c] = f.Gt[3 * j + c] - o[c];
  }
}

// landmark k in the rest pose, shaped and pose-corrected: v (3); kp_delta (K, 3) is added to the template
// (a take's own landmark offsets, learned by the fit)
template <typename T>
MK_HD void body_landmark_rest(const BodyData<T>& d, const T* betas, const T* kp_delta, const BodyFrame<T>& f, int k,
                              T* v) {
  const int n_feat = (d.R - 1) * 9;
  for (int c = 0; c < 3; ++c) {
    T s = d.kp_template[3 * k + c] + kp_delta[3 * k + c];
    const T* sd = d.kp_shapedirs + (3 * k + c) * d.B;
    for (int b = 0; b < d.B; ++b) s += sd[b] * betas[b];
    if (k < d.Kp)
      for (int e = 0; e < n_feat; ++e) {
        const T pf = f.Rl[9 + e] - ((e % 9) % 4 == 0 ? T(1) : T(0));  // R_local - I, joints 1..R-1
        s += d.kp_posedirs[e * d.Kp * 3 + 3 * k + c] * pf;
      }
    v[c] = s;
  }
}

// out (J + K, 3): posed joints and landmarks plus translation
template <typename T>
MK_HD void body_frame_forward(const BodyData<T>& d, const T* r6, const T* betas, const T* kp_delta, const T* transl,
                              T* out, BodyFrame<T>& f) {
  body_frame_state(d, r6, betas, f);
  for (int j = 0; j < d.J; ++j)
    for (int c = 0; c < 3; ++c) out[3 * j + c] = f.Gt[3 * j + c] + transl[c];
  for (int k = 0; k < d.K; ++k) {
    T v[3];
    body_landmark_rest(d, betas, kp_delta, f, k, v);
    T x[3] = {transl[0], transl[1], transl[2]};
    const T* w = d.kp_weights + k * d.J;
    for (int j = 0; j < d.J; ++j) {
      if (w[j] == T(0)) continue;
      T o[3];
      matvec3(f.GR + 9 * j, v, o);
      for (int c = 0; c < 3; ++c) x[c] += w[j] * (o[c] + f.At[3 * j + c]);
    }
    for (int c = 0; c < 3; ++c) out[3 * (d.J + k) + c] = x[c];
  }
}

// gradients of one frame: g6 (R, 3, 2), gbetas (B), gtransl (3), gdelta (K, 3) from gout (J + K, 3)
template <typename T>
MK_HD void body_frame_backward(const BodyData<T>& d, const T* r6, const T* betas, const T* kp_delta, const T* gout,
                               T* g6, T* gbetas, T* gtransl, T* gdelta, BodyFrame<T>& f, BodyFrame<T>& g) {
  body_frame_state(d, r6, betas, f);
  // g reuses the frame layout for the gradients: g.Rl, g.Jrest, g.GR, g.Gt
  for (int e = 0; e < d.R * 9; ++e) g.Rl[e] = 0;
  for (int e = 0; e < d.J * 9; ++e) g.GR[e] = 0;
  for (int e = 0; e < d.J * 3; ++e) {
    g.Jrest[e] = 0;
    g.Gt[e] = gout[e];
  }
  for (int b = 0; b < d.B; ++b) gbetas[b] = 0;
  for (int c = 0; c < 3; ++c) gtransl[c] = 0;
  for (int n = 0; n < d.J + d.K; ++n)
    for (int c = 0; c < 3; ++c) gtransl[c] += gout[3 * n + c];
  const int n_feat = (d.R - 1) * 9;
  for (int k = 0; k < d.K; ++k) {
    const T* go = gout + 3 * (d.J + k);
    T v[3];
    body_landmark_rest(d, betas, kp_delta, f, k, v);
    const T* w = d.kp_weights + k * d.J;
    T gv[3] = {0, 0, 0};
    for (int j = 0; j < d.J; ++j) {
      const T wj = w[j];
      if (wj == T(0)) continue;
      const T* GRj = f.GR + 9 * j;
      T t[3];
      matTvec3(GRj, go, t);  // x += w (GR v + Gt - GR Jrest)
      for (int c = 0; c < 3; ++c) {
        gv[c] += wj * t[c];
        g.Jrest[3 * j + c] -= wj * t[c];
        g.Gt[3 * j + c] += wj * go[c];
      }
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) g.GR[9 * j + 3 * a + b] += wj * go[a] * (v[b] - f.Jrest[3 * j + b]);
    }
    for (int c = 0; c < 3; ++c) {
      gdelta[3 * k + c] = gv[c];
      const T* sd = d.kp_shapedirs + (3 * k + c) * d.B;
      for (int b = 0; b < d.B; ++b) gbetas[b] += sd[b] * gv[c];
    }
    if (k < d.Kp)
      for (int e = 0; e < n_feat; ++e) {
        const T* pd = d.kp_posedirs + e * d.Kp * 3 + 3 * k;
        g.Rl[9 + e] += pd[0] * gv[0] + pd[1] * gv[1] + pd[2] * gv[2];
      }
  }
  for (int j = d.J - 1; j >= 1; --j) {
    const int p = static_cast<int>(d.parents[j]);
    const T* GRp = f.GR + 9 * p;
    const T* gGt = g.Gt + 3 * j;
    T rel[3] = {f.Jrest[3 * j] - f.Jrest[3 * p], f.Jrest[3 * j + 1] - f.Jrest[3 * p + 1],
                f.Jrest[3 * j + 2] - f.Jrest[3 * p + 2]};
    T grel[3];
    matTvec3(GRp, gGt, grel);
    for (int c = 0; c < 3; ++c) {
      g.Gt[3 * p + c] += gGt[c];
      g.Jrest[3 * j + c] += grel[c];
      g.Jrest[3 * p + c] -= grel[c];
    }
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) g.GR[9 * p + 3 * a + b] += gGt[a] * rel[b];
    const T* gGR = g.GR + 9 * j;
    if (j < d.R) {  // GR_j = GR_p Rl_j
      const T* Rl = f.Rl + 9 * j;
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
          T sp = 0, sl = 0;
          for (int c = 0; c < 3; ++c) {
            sp += gGR[3 * a + c] * Rl[3 * b + c];   // (gGR Rl^T)_ab
            sl += GRp[3 * c + a] * gGR[3 * c + b];  // (GR_p^T gGR)_ab
          }
          g.GR[9 * p + 3 * a + b] += sp;
          g.Rl[9 * j + 3 * a + b] += sl;
        }
    } else {
      for (int e = 0; e < 9; ++e) g.GR[9 * p + e] += gGR[e];
    }
  }
  for (int e = 0; e < 9; ++e) g.Rl[e] += g.GR[e];
  for (int c = 0; c < 3; ++c) g.Jrest[c] += g.Gt[c];
  for (int j = 0; j < d.J; ++j)
    for (int c = 0; c < 3; ++c) {
      const T* sd = d.J_shapedirs + (3 * j + c) * d.B;
      for (int b = 0; b < d.B; ++b) gbetas[b] += sd[b] * g.Jrest[3 * j + c];
    }
  for (int e = 0; e < d.R * 6; ++e) g6[e] = 0;
  for (int j = 0; j < d.R; ++j) gram_schmidt_backward(r6 + 6 * j, g.Rl + 9 * j, g6 + 6 * j);
}

// ------------------------------------------------------------------------------------------ rotation vectors
template <typename T>
MK_HD void rot6d_to_rotvec_one(const T* r6, T* rv) {
  T R[9];
  gram_schmidt(r6, R);
  rotmat_to_rotvec(R, rv);
}

template <typename T>
MK_HD void rot6d_to_rotvec_one_backward(const T* r6, const T* grv, T* g6) {
  T R[9], gR[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  gram_schmidt(r6, R);
  rotmat_to_rotvec_backward(R, grv, gR);
  for (int e = 0; e < 6; ++e) g6[e] = 0;
  gram_schmidt_backward(r6, gR, g6);
}

// ------------------------------------------------------------------------------------------ reprojection
// One frame (p, m) of the robust reprojection loss: sums of w GMoF(|pi(R X + t) - x|^2) / sigma^2 and w over
// V views and J joints (w = weight where the projection is valid). joints (J, 3); R (V, 9), t (V, 3),
// prm (V, 8), tmax (V) of problem p; obs (V, J, 2), weight (V, J); partner (J) each joint's interchangeable
// counterpart or -1: where both of a pair are observed and valid in a view, the pair costs the cheaper of
// its two labellings (observation j on joint j and k on k, or j on k and k on j).
constexpr int kMaxReprojectionJoints = 32;

template <typename T>
MK_HD T gmof_ratio(const T* uv, const T* x, T s2) {  // GMoF of the pixel residual uv - x
  const T e0 = uv[0] - x[0], e1 = uv[1] - x[1];
  return gmof(e0 * e0 + e1 * e1, s2);
}

// every joint of one view projected (ok[j]: weighted and valid); jac (J, 6) when not null
template <typename T>
MK_HD void project_view(const T* joints, const T* Rv, const T* tv, const T* prm, T tmax, const T* wv, int J,
                        T (*uv)[2], bool* ok, T (*jac)[6]) {
  for (int j = 0; j < J; ++j) {
    ok[j] = false;
    if (!(wv[j] > T(0))) continue;
    T pc[3];
    matvec3(Rv, joints + 3 * j, pc);
    for (int c = 0; c < 3; ++c) pc[c] += tv[c];
    ok[j] = kb3_project(pc, prm, tmax, uv[j], jac ? jac[j] : static_cast<T*>(nullptr));
  }
}

// whether the observations of j and its partner k are matched crossed (k's projection with j's observation)
template <typename T>
MK_HD bool crossed_cheaper(const T (*uv)[2], const T* xv, const T* wv, int j, int k, T s2) {
  const T straight = wv[j] * gmof_ratio(uv[j], xv + 2 * j, s2) + wv[k] * gmof_ratio(uv[k], xv + 2 * k, s2);
  const T crossed = wv[j] * gmof_ratio(uv[k], xv + 2 * j, s2) + wv[k] * gmof_ratio(uv[j], xv + 2 * k, s2);
  return crossed < straight;
}

template <typename T>
MK_HD void reprojection_frame(const T* joints, const T* R, const T* t, const T* prm, const T* tmax, const T* obs,
                              const T* weight, const int64_t* partner, int V, int J, T sigma, T* num, T* den) {
  T s2 = sigma * sigma, n = 0, dsum = 0;
  T uv[kMaxReprojectionJoints][2];
  bool ok[kMaxReprojectionJoints];
  for (int v = 0; v < V; ++v) {
    const T *wv = weight + v * J, *xv = obs + 2 * v * J;
    project_view(joints, R + 9 * v, t + 3 * v, prm + 8 * v, tmax[v], wv, J, uv, ok, static_cast<T(*)[6]>(nullptr));
    for (int j = 0; j < J; ++j) {
      if (!ok[j]) continue;
      const int k = static_cast<int>(partner[j]);
      const bool pair = k >= 0 && k < J && ok[k];
      const int own = pair && crossed_cheaper(uv, xv, wv, j, k, s2) ? k : j;  // the projection x_j is matched to
      n += wv[j] * gmof_ratio(uv[own], xv + 2 * j, s2);
      dsum += wv[j];
    }
  }
  *num = n;
  *den = dsum;
}

// gradient w.r.t. the joints (J, 3) of scale * sum w GMoF(...) (scale = upstream gradient / den)
template <typename T>
MK_HD void reprojection_frame_backward(const T* joints, const T* R, const T* t, const T* prm, const T* tmax,
                                       const T* obs, const T* weight, const int64_t* partner, int V, int J, T sigma,
                                       T scale, T* gjoints) {
  T s2 = sigma * sigma;
  T uv[kMaxReprojectionJoints][2], jac[kMaxReprojectionJoints][6];
  bool ok[kMaxReprojectionJoints];
  for (int e = 0; e < 3 * J; ++e) gjoints[e] = 0;
  for (int v = 0; v < V; ++v) {
    const T *wv = weight + v * J, *xv = obs + 2 * v * J, *Rv = R + 9 * v;
    project_view(joints, Rv, t + 3 * v, prm + 8 * v, tmax[v], wv, J, uv, ok, jac);
    for (int j = 0; j < J; ++j) {
      if (!ok[j]) continue;
      const int k = static_cast<int>(partner[j]);
      const bool pair = k >= 0 && k < J && ok[k];
      const int own = pair && crossed_cheaper(uv, xv, wv, j, k, s2) ? k : j;
      const T* x = xv + 2 * j;
      const T e0 = uv[own][0] - x[0], e1 = uv[own][1] - x[1];
      const T r2 = e0 * e0 + e1 * e1;
      const T c2 = gmof_grad(scale * wv[j], r2, s2) * 2;  // times d r2 / d e = 2 e
      T gpc[3];
      for (int c = 0; c < 3; ++c) gpc[c] = c2 * (e0 * jac[own][c] + e1 * jac[own][3 + c]);
      T gX[3];
      matTvec3(Rv, gpc, gX);
      for (int c = 0; c < 3; ++c) gjoints[3 * own + c] += gX[c];
    }
  }
}

// ------------------------------------------------------------------------------------------ head motion
// The Aria head term of one problem (torch reference: motionkit.body.objective.head_motion): J (M R, 3) the
// problem's body output flattened over frames and rows; index (N, 4) the rows of the left and right eye at
// the later and the earlier frame of each pair; delta (N, 3) the anchor's displacement; weight (N).
// sum_n weight GMoF(|de - da|^2; sigma) / sigma^2 with de the eye midpoint's displacement.
template <typename T>
MK_HD void head_pair_residual(const T* J, const int64_t* ix, const T* delta, T* d) {
  for (int c = 0; c < 3; ++c)
    d[c] = T(0.5) * (J[3 * ix[0] + c] + J[3 * ix[1] + c] - J[3 * ix[2] + c] - J[3 * ix[3] + c]) - delta[c];
}

// One pair's share weight GMoF(|d|^2; sigma) / sigma^2 (s2 = sigma^2); 0 without weight.
template <typename T>
MK_HD T head_pair_term(const T* J, const int64_t* ix, const T* delta, T weight, T s2) {
  if (!(weight != T(0))) return T(0);
  T d[3];
  head_pair_residual(J, ix, delta, d);
  const T r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
  return weight * r2 / (s2 + r2);
}

// The problem's term: the pairs' shares (partial (N), head_pair_term) added in pair order, as the CPU
// computes them in place (head_motion_problem) and the GPU after computing them one thread per pair.
template <typename T>
MK_HD T head_motion_sum(const T* partial, int64_t N) {
  T total = 0;
  for (int64_t n = 0; n < N; ++n) total += partial[n];
  return total;
}

template <typename T>
MK_HD T head_motion_problem(const T* J, const int64_t* index, const T* delta, const T* weight, int64_t N, T s2) {
  T total = 0;
  for (int64_t n = 0; n < N; ++n) total += head_pair_term(J, index + 4 * n, delta + 3 * n, weight[n], s2);
  return total;
}

// The gradient g (3) of grad * weight GMoF(|d|^2; sigma) / sigma^2 w.r.t. the pair's signed row sum,
// which passes it on to its rows: + g / 2 to the first two, - g / 2 to the last two (folded in here).
template <typename T>
MK_HD void head_pair_gradient(const T* J, const int64_t* ix, const T* delta, T weight, T s2, T grad, T* g) {
  T d[3];
  head_pair_residual(J, ix, delta, d);
  const T r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
  const T q = s2 + r2;
  const T scale = grad * weight * s2 / (q * q) * 2 * T(0.5);  // d/dr2 of r2/(s2+r2), x 2 d, x 1/2 per row
  for (int c = 0; c < 3; ++c) g[c] = scale * d[c];
}

// Row t of the gradient (3 channels) of grad * head_motion_problem w.r.t. J: the pairs that read row t
// gathered instead of scattered (readers[reader_ptr[t] .. reader_ptr[t + 1]], each r = 4 n + slot, in
// increasing r: the order in which a pass over the pairs would add them), so that every row is one
// independent sum (one GPU thread each, no atomics) and CPU and GPU add in the same order.
template <typename T>
MK_HD void head_motion_backward_row(const T* J, const int64_t* index, const T* delta, const T* weight,
                                    const int64_t* readers, const int64_t* reader_ptr, int64_t t, T s2, T grad,
                                    T* out) {
  out[0] = out[1] = out[2] = 0;
  for (int64_t k = reader_ptr[t]; k < reader_ptr[t + 1]; ++k) {
    const int64_t r = readers[k], n = r / 4;
    if (!(weight[n] != T(0))) continue;
    T g[3];
    head_pair_gradient(J, index + 4 * n, delta + 3 * n, weight[n], s2, grad, g);
    for (int c = 0; c < 3; ++c) out[c] += r % 4 < 2 ? g[c] : -g[c];
  }
}

// ------------------------------------------------------------------------------------------ reductions
constexpr double kReprojectionClamp = 1e-6;  // sum of weights below which the loss is sum w GMoF / 1e-6
constexpr double kPriorClamp = 1.0;          // masked means divide by max(sum w, 1)

// Term k of one problem's per-frame partial sums part (M, 2K) (K numerators, then K denominators): the mean
// out[k] = sum num / max(sum den, clamp) and the denominator, summed in frame order in double precision
// (one GPU thread per problem and term).
template <typename T>
MK_HD void reduce_term(const T* part, int64_t M, int K, int k, double clamp, T* out, T* den) {
  double n = 0, d = 0;
  for (int64_t m = 0; m < M; ++m) {
    n += part[m * 2 * K + k];
    d += part[m * 2 * K + K + k];
  }
  den[k] = static_cast<T>(d);
  out[k] = static_cast<T>(n / (d > clamp ? d : clamp));
}

// column b of rows (per, B) summed in row order in double precision: a problem's shape gradient from its
// frames (the same result whatever else is in the batch, padding included; one GPU thread per column)
template <typename T>
MK_HD T sum_column(const T* rows, int64_t per, int B, int b) {
  double s = 0;
  for (int64_t n = 0; n < per; ++n) s += rows[n * B + b];
  return static_cast<T>(s);
}

// upstream gradient / clamped denominator, per term
template <typename T>
MK_HD T mean_scale(const T* grad, const T* den, int64_t i, double clamp) {
  const double d = den[i];
  return static_cast<T>(grad[i] / (d > clamp ? d : clamp));
}

// ------------------------------------------------------------------------------------------ prior terms
// The terms of the fit objective besides the reprojection, for frame m of problem p (all arrays of that
// problem, frame-major). Five per-problem masked means, as numerators and denominators:
//   0: 3D agreement  sum_c w_c GMoF(|J[coco[c]] - tri_c|^2; sigma3) over the frame's weights tri_w
//   1: acceleration  mean_j |(J[m+2] - 2 J[m+1] + J[m]) fps^2|^2 over the 55 kinematic joints, weight
//      fm[m] fm[m+1] fm[m+2] (m <= M - 3)
//   2: orientation   |go6[m+1] - go6[m]|^2, weight fm[m] fm[m+1] (m <= M - 2)
//   3: pose          |rv|^2 over the 21 body joints, weight fm[m]
//   4: joint limits  sum_l relu(lo_l - rv[j_l, axis_l])^2 + relu(rv[j_l, axis_l] - hi_l)^2, weight fm[m]
//   5: bone ranges   sum_b relu(lo_b - c_b)^2 + relu(c_b - hi_b)^2, c_b = sign_b R_b[axis_b, column_b] with R_b
//      the Gram-Schmidt rotation of go6's joint j_b (a child bone's component along an axis), weight fm[m]
template <typename T>
struct PriorData {
  const T* J;           // (M, Jn, 3) posed joints and landmarks
  const int64_t* coco;  // (C,) columns of J matched to the triangulated joints
  const T* tri;         // (M, C, 3)
  const T* tri_w;       // (M, C) 0 where unused
  const T* fm;          // (M,) 1 for real frames, 0 for padding
  const T* go6;         // (M, R6, 6) 6D rotations; joint 0 is the global orientation
  const T* rv;          // (M, NR, 3) local body-joint rotation vectors
  const T* limits;      // (L, 4): joint column in rv, axis, lower, upper (+-inf: none)
  const T* bones;       // (NB, 6): joint in go6, column (0, 1), sign, axis, lower, upper (+-inf: none)
  T fps, sigma3;
  int64_t M;
  int Jn, C, NR, L, NB, n_acc;  // n_acc: kinematic joints in the acceleration term (55)
  int R6;                   // rotations per frame in go6
};

constexpr int kPriorTerms = 6;

// move the problem-0 pointers of d to problem p
template <typename T>
MK_HD PriorData<T> prior_problem(PriorData<T> d, int64_t p, const T* fps) {
  const int64_t M = d.M;
  d.J += p * M * d.Jn * 3;
  d.tri += p * M * d.C * 3;
  d.tri_w += p * M * d.C;
  d.fm += p * M;
  d.go6 += p * M * d.R6 * 6;
  d.rv += p * M * d.NR * 3;
  d.fps = fps[p];
  return d;
}

// frame m, triangulated joint c: model point x, triangulated point y, squared distance
template <typename T>
MK_HD T prior_3d_residual(const PriorData<T>& d, int64_t m, int c, const T** x, const T** y) {
  *x = d.J + (m * d.Jn + d.coco[c]) * 3;
  *y = d.tri + (m * d.C + c) * 3;
  T d2 = 0;
  for (int k = 0; k < 3; ++k) d2 += ((*x)[k] - (*y)[k]) * ((*x)[k] - (*y)[k]);
  return d2;
}

// the squared excess of a beyond its bounds lo <= hi (+-inf: none), and that excess's derivative with
// respect to a: the hinge of the joint limits and of the bone ranges
template <typename T>
MK_HD void bound_excess(T a, T lo, T hi, T* excess2, T* dexcess) {
  *excess2 = 0;
  *dexcess = 0;
  if (isfinite(lo) && a < lo) {
    *excess2 += (lo - a) * (lo - a);
    *dexcess -= 2 * (lo - a);
  }
  if (isfinite(hi) && a > hi) {
    *excess2 += (a - hi) * (a - hi);
    *dexcess += 2 * (a - hi);
  }
}

// limit row l: the index of the rotation-vector entry it bounds among a frame's NR x 3 rv entries
template <typename T>
MK_HD int prior_limit_entry(const PriorData<T>& d, int l) {
  return static_cast<int>(d.limits[4 * l]) * 3 + static_cast<int>(d.limits[4 * l + 1]);
}

// bone row b at frame m: bound_excess of its component c (sign x the rotation's entry)
template <typename T>
MK_HD void prior_bone(const PriorData<T>& d, int64_t m, int b, T* excess2, T* dexcess) {
  const T* row = d.bones + 6 * b;
  T R[9];
  gram_schmidt(d.go6 + (m * d.R6 + static_cast<int>(row[0])) * 6, R);
  bound_excess(row[2] * R[static_cast<int>(row[3]) * 3 + static_cast<int>(row[1])], row[4], row[5], excess2, dexcess);
}

// acceleration of joint j, axis k at frames k0..k0+2 (m/s^2)
template <typename T>
MK_HD T prior_acceleration(const PriorData<T>& d, int64_t k0, int j, int k) {
  return (d.J[((k0 + 2) * d.Jn + j) * 3 + k] - 2 * d.J[((k0 + 1) * d.Jn + j) * 3 + k] + d.J[(k0 * d.Jn + j) * 3 + k]) *
         d.fps * d.fps;
}

template <typename T>
MK_HD void prior_terms_frame(const PriorData<T>& d, int64_t m, T* num, T* den) {
  for (int i = 0; i < kPriorTerms; ++i) num[i] = den[i] = 0;
  const T s2 = d.sigma3 * d.sigma3;
  for (int c = 0; c < d.C; ++c) {
    const T w = d.tri_w[m * d.C + c];
    if (w == T(0)) continue;
    const T *x, *y;
    const T d2 = prior_3d_residual(d, m, c, &x, &y);
    num[0] += w * gmof(d2, s2);
    den[0] += w;
  }
  if (m + 2 < d.M) {
    const T w = d.fm[m] * d.fm[m + 1] * d.fm[m + 2];
    T v = 0;
    for (int j = 0; j < d.n_acc; ++j)
      for (int k = 0; k < 3; ++k) {
        const T a = prior_acceleration(d, m, j, k);
        v += a * a;
      }
    num[1] += w * v / d.n_acc;
    den[1] += w;
  }
  if (m + 1 < d.M) {
    const T w = d.fm[m] * d.fm[m + 1];
    T v = 0;
    for (int k = 0; k < 6; ++k) {
      const T e = d.go6[(m + 1) * d.R6 * 6 + k] - d.go6[m * d.R6 * 6 + k];
      v += e * e;
    }
    num[2] += w * v;
    den[2] += w;
  }
  const T w = d.fm[m];
  const T* r = d.rv + m * d.NR * 3;
  T pose = 0, lim = 0;
  for (int e = 0; e < d.NR * 3; ++e) pose += r[e] * r[e];
  for (int l = 0; l < d.L; ++l) {
    T e2, de;
    bound_excess(r[prior_limit_entry(d, l)], d.limits[4 * l + 2], d.limits[4 * l + 3], &e2, &de);
    lim += e2;
  }
  T bone = 0;
  for (int b = 0; b < d.NB; ++b) {
    T e2, de;
    prior_bone(d, m, b, &e2, &de);
    bone += e2;
  }
  num[3] += w * pose;
  den[3] += w;
  num[4] += w * lim;
  den[4] += w;
  num[5] += w * bone;
  den[5] += w;
}

// gradients of sum_i scale[i] * num_i (scale = upstream gradient / clamped denominator) w.r.t. frame m's joints
// gJ (Jn, 3), orientation ggo (6; joint 0 of go6) and rotation vectors grv (NR, 3): gathered from the terms that
// use frame m
template <typename T>
MK_HD void prior_terms_frame_backward(const PriorData<T>& d, int64_t m, const T* scale, T* gJ, T* ggo, T* grv) {
  for (int e = 0; e < d.Jn * 3; ++e) gJ[e] = 0;
  const T s2 = d.sigma3 * d.sigma3;
  for (int c = 0; c < d.C; ++c) {
    const T w = d.tri_w[m * d.C + c];
    if (w == T(0)) continue;
    const T *x, *y;
    const T d2 = prior_3d_residual(d, m, c, &x, &y);
    const T g = gmof_grad(scale[0] * w, d2, s2) * 2;
    for (int k = 0; k < 3; ++k) gJ[d.coco[c] * 3 + k] += g * (x[k] - y[k]);
  }
  const T f2 = d.fps * d.fps;
  for (int64_t k0 = m - 2; k0 <= m; ++k0) {  // accelerations at k0 use frames k0, k0 + 1, k0 + 2
    if (k0 < 0 || k0 + 2 >= d.M) continue;
    const T w = d.fm[k0] * d.fm[k0 + 1] * d.fm[k0 + 2];
    if (w == T(0)) continue;
    const T coef = (m == k0 + 1 ? T(-2) : T(1)) * scale[1] * w * 2 * f2 / d.n_acc;
    for (int j = 0; j < d.n_acc; ++j)
      for (int k = 0; k < 3; ++k) gJ[j * 3 + k] += coef * prior_acceleration(d, k0, j, k);
  }
  for (int k = 0; k < 6; ++k) ggo[k] = 0;
  if (m >= 1) {
    const T w = scale[2] * d.fm[m - 1] * d.fm[m] * 2;
    for (int k = 0; k < 6; ++k) ggo[k] += w * (d.go6[m * d.R6 * 6 + k] - d.go6[(m - 1) * d.R6 * 6 + k]);
  }
  if (m + 1 < d.M) {
    const T w = scale[2] * d.fm[m] * d.fm[m + 1] * 2;
    for (int k = 0; k < 6; ++k) ggo[k] += w * (d.go6[m * d.R6 * 6 + k] - d.go6[(m + 1) * d.R6 * 6 + k]);
  }
  const T w = d.fm[m];
  const T* r = d.rv + m * d.NR * 3;
  for (int e = 0; e < d.NR * 3; ++e) grv[e] = scale[3] * w * 2 * r[e];
  for (int l = 0; l < d.L; ++l) {
    const int e = prior_limit_entry(d, l);
    T e2, de;
    bound_excess(r[e], d.limits[4 * l + 2], d.limits[4 * l + 3], &e2, &de);
    if (de != T(0)) grv[e] += scale[4] * w * de;
  }
  // bone ranges: the gradient of the rotation's one entry, through Gram-Schmidt, into that joint's 6D rows
  // (ggo holds the frame's R6 x 6 block; the bones never name joint 0, whose rows are set above)
  for (int b = 0; b < d.NB; ++b) {
    T e2, de;
    prior_bone(d, m, b, &e2, &de);
    if (de == T(0)) continue;
    const T* row = d.bones + 6 * b;
    const int j = static_cast<int>(row[0]);
    T gR[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    gR[static_cast<int>(row[3]) * 3 + static_cast<int>(row[1])] = scale[5] * w * de * row[2];
    gram_schmidt_backward(d.go6 + (m * d.R6 + j) * 6, gR, ggo + j * 6);
  }
}

// ------------------------------------------------------------------------------------------ items
// One item of each operator with the whole batch's pointers: the pointer arithmetic of frame n (or (p, m) at
// i = p M + m) written once, called by the CPU loop (ops_cpu.cpp) and the CUDA thread (ops_cuda.cu) alike.
// `per`: frames sharing one row of betas and kp_delta (one take's shape).
template <typename T>
MK_HD void body_forward_item(const BodyData<T>& d, const T* r6, const T* betas, const T* kp_delta, const T* transl,
                             T* out, int64_t n, int64_t per, BodyFrame<T>& f) {
  body_frame_forward(d, r6 + n * d.R * 6, betas + (n / per) * d.B, kp_delta + (n / per) * d.K * 3, transl + n * 3,
                     out + n * (d.J + d.K) * 3, f);
}

// gb (N, B) and gd (N, K, 3) per frame: the shared rows are summed afterwards (sum_rows)
template <typename T>
MK_HD void body_backward_item(const BodyData<T>& d, const T* r6, const T* betas, const T* kp_delta, const T* gout,
                              T* g6, T* gb, T* gt, T* gd, int64_t n, int64_t per, BodyFrame<T>& f, BodyFrame<T>& g) {
  body_frame_backward(d, r6 + n * d.R * 6, betas + (n / per) * d.B, kp_delta + (n / per) * d.K * 3,
                      gout + n * (d.J + d.K) * 3, g6 + n * d.R * 6, gb + n * d.B, gt + n * 3, gd + n * d.K * 3, f, g);
}

// frame i = p M + m; part (P M, 2): the frame's numerator and denominator
template <typename T>
MK_HD void reprojection_item(const T* X, const T* R, const T* t, const T* prm, const T* tmax, const T* obs,
                             const T* w, const int64_t* partner, int64_t i, int64_t M, int V, int J, T sigma,
                             T* part) {
  const int64_t p = i / M;
  reprojection_frame(X + i * J * 3, R + p * V * 9, t + p * V * 3, prm + p * V * 8, tmax + p * V, obs + i * V * J * 2,
                     w + i * V * J, partner, V, J, sigma, part + 2 * i, part + 2 * i + 1);
}

// grad (P,), den (P,): the upstream gradient and the per-problem denominators of the forward pass
template <typename T>
MK_HD void reprojection_backward_item(const T* X, const T* R, const T* t, const T* prm, const T* tmax, const T* obs,
                                      const T* w, const int64_t* partner, int64_t i, int64_t M, int V, int J, T sigma,
                                      const T* grad, const T* den, T* out) {
  const int64_t p = i / M;
  reprojection_frame_backward(X + i * J * 3, R + p * V * 9, t + p * V * 3, prm + p * V * 8, tmax + p * V,
                              obs + i * V * J * 2, w + i * V * J, partner, V, J, sigma,
                              mean_scale(grad, den, p, kReprojectionClamp), out + i * J * 3);
}

// frame i = p M + m of the prior terms; part (P M, 2 kPriorTerms)
template <typename T>
MK_HD void prior_item(const PriorData<T>& d, const T* fps, int64_t i, T* part) {
  constexpr int K = kPriorTerms;
  const auto dp = prior_problem(d, i / d.M, fps);
  prior_terms_frame(dp, i % d.M, part + i * 2 * K, part + i * 2 * K + K);
}

template <typename T>
MK_HD void prior_backward_item(const PriorData<T>& d, const T* fps, int64_t i, const T* grad, const T* den, T* gJ,
                               T* ggo, T* grv) {
  const int64_t p = i / d.M;
  const auto dp = prior_problem(d, p, fps);
  T sc[kPriorTerms];
  for (int k = 0; k < kPriorTerms; ++k) sc[k] = mean_scale(grad, den, p * kPriorTerms + k, kPriorClamp);
  prior_terms_frame_backward(dp, i % d.M, sc, gJ + i * d.Jn * 3, ggo + i * d.R6 * 6, grv + i * d.NR * 3);
}

}  // namespace mk
