// motionkit fused operators: argument checks and small host helpers shared by the CPU and CUDA files.
#pragma once

#include <ATen/ATen.h>

#include "mk_body.h"

namespace mk {

inline void check_same(const at::Tensor& ref, const at::Tensor& x, const char* name) {
  TORCH_CHECK(x.is_contiguous(), "motionkit: ", name, " must be contiguous");
  TORCH_CHECK(x.device() == ref.device(), "motionkit: ", name, " is on ", x.device(), ", expected ", ref.device());
  TORCH_CHECK(x.scalar_type() == ref.scalar_type(), "motionkit: ", name, " has dtype ", x.scalar_type(),
              ", expected ", ref.scalar_type());
}

inline void check_rot6d(const at::Tensor& rot6d) {
  TORCH_CHECK(rot6d.dim() == 3 && rot6d.size(1) == 3 && rot6d.size(2) == 2,
              "motionkit: rot6d must have shape (N, 3, 2), got ", rot6d.sizes());
  TORCH_CHECK(rot6d.is_contiguous(), "motionkit: rot6d must be contiguous");
}

inline void check_body_inputs(const at::Tensor& rot6d, const at::Tensor& betas, const at::Tensor& kp_delta,
                              const at::Tensor& transl, const at::Tensor& J_template, const at::Tensor& J_shapedirs,
                              const at::Tensor& kp_template, const at::Tensor& kp_shapedirs,
                              const at::Tensor& kp_posedirs, const at::Tensor& kp_weights,
                              const at::Tensor& parents) {
  TORCH_CHECK(rot6d.dim() == 4 && rot6d.size(2) == 3 && rot6d.size(3) == 2,
              "motionkit.body_joints: rot6d must have shape (N, R, 3, 2), got ", rot6d.sizes());
  const int64_t N = rot6d.size(0), R = rot6d.size(1);
  const int64_t J = J_template.size(0), K = kp_template.size(0), B = betas.size(-1);
  TORCH_CHECK(R >= 1 && R <= kMaxRotated && R <= J, "motionkit.body_joints: ", R, " rotated joints (at most ",
              kMaxRotated, ")");
  TORCH_CHECK(J <= kMaxJoints, "motionkit.body_joints: ", J, " joints (at most ", kMaxJoints, ")");
  TORCH_CHECK(B <= kMaxBetas, "motionkit.body_joints: ", B, " shape coefficients (at most ", kMaxBetas, ")");
  TORCH_CHECK(betas.dim() == 2 && betas.size(0) >= 1 && N % betas.size(0) == 0,
              "motionkit.body_joints: betas must be (N, B), or (P, B) shared by N / P consecutive frames; got ",
              betas.sizes(), " for N = ", N);
  TORCH_CHECK(kp_delta.dim() == 3 && kp_delta.size(0) == betas.size(0) && kp_delta.size(1) == K &&
                  kp_delta.size(2) == 3,
              "motionkit.body_joints: kp_delta must be (rows of betas, K, 3) = (", betas.size(0), ", ", K,
              ", 3), got ", kp_delta.sizes());
  if (transl.defined()) {  // the backward has no translation to check
    TORCH_CHECK(transl.dim() == 2 && transl.size(0) == N && transl.size(1) == 3,
                "motionkit.body_joints: transl must be (N, 3), got ", transl.sizes());
    check_same(rot6d, transl, "transl");
  }
  TORCH_CHECK(J_shapedirs.sizes() == at::IntArrayRef({J, 3, B}), "motionkit.body_joints: J_shapedirs ",
              J_shapedirs.sizes());
  TORCH_CHECK(kp_shapedirs.sizes() == at::IntArrayRef({K, 3, B}), "motionkit.body_joints: kp_shapedirs ",
              kp_shapedirs.sizes());
  TORCH_CHECK(kp_posedirs.dim() == 2 && kp_posedirs.size(0) >= (R - 1) * 9 && kp_posedirs.size(1) % 3 == 0 &&
                  kp_posedirs.size(1) <= K * 3,
              "motionkit.body_joints: kp_posedirs must be (>= (R - 1) * 9, Kp * 3) with Kp <= K (the first Kp "
              "landmarks have pose correctives), got ", kp_posedirs.sizes());
  TORCH_CHECK(kp_weights.sizes() == at::IntArrayRef({K, J}), "motionkit.body_joints: kp_weights ",
              kp_weights.sizes());
  TORCH_CHECK(parents.dim() == 1 && parents.size(0) == J && parents.scalar_type() == at::kLong &&
                  parents.is_contiguous() && parents.device() == rot6d.device(),
              "motionkit.body_joints: parents must be a contiguous int64 (J,) tensor on the device of rot6d");
  check_same(rot6d, rot6d, "rot6d");
  for (auto& [x, name] : {std::pair<const at::Tensor&, const char*>{betas, "betas"}, {kp_delta, "kp_delta"},
                          {J_template, "J_template"}, {J_shapedirs, "J_shapedirs"}, {kp_template, "kp_template"},
                          {kp_shapedirs, "kp_shapedirs"}, {kp_posedirs, "kp_posedirs"}, {kp_weights, "kp_weights"}})
    check_same(rot6d, x, name);
}

template <typename T>
BodyData<T> body_data(const at::Tensor& J_template, const at::Tensor& J_shapedirs, const at::Tensor& kp_template,
                      const at::Tensor& kp_shapedirs, const at::Tensor& kp_posedirs, const at::Tensor& kp_weights,
                      const at::Tensor& parents, int64_t R) {
  BodyData<T> d;
  d.J_template = J_template.data_ptr<T>();
  d.J_shapedirs = J_shapedirs.data_ptr<T>();
  d.kp_template = kp_template.data_ptr<T>();
  d.kp_shapedirs = kp_shapedirs.data_ptr<T>();
  d.kp_posedirs = kp_posedirs.data_ptr<T>();
  d.kp_weights = kp_weights.data_ptr<T>();
  d.parents = parents.data_ptr<int64_t>();
  d.J = static_cast<int>(J_template.size(0));
  d.K = static_cast<int>(kp_template.size(0));
  d.B = static_cast<int>(J_shapedirs.size(2));
  d.R = static_cast<int>(R);
  d.Kp = static_cast<int>(kp_posedirs.size(1) / 3);
  return d;
}

struct ReprojectionSizes {
  int64_t P, M;
  int V, J;
};

inline ReprojectionSizes check_reprojection_inputs(const at::Tensor& joints, const at::Tensor& R, const at::Tensor& t,
                                                   const at::Tensor& params, const at::Tensor& theta_max,
                                                   const at::Tensor& obs, const at::Tensor& weight,
                                                   const at::Tensor& partner) {
  TORCH_CHECK(joints.dim() == 4 && joints.size(3) == 3,
              "motionkit.robust_reprojection: joints must be (P, M, J, 3), got ", joints.sizes());
  const int64_t P = joints.size(0), M = joints.size(1), J = joints.size(2), V = R.size(1);
  TORCH_CHECK(R.sizes() == at::IntArrayRef({P, V, 3, 3}), "motionkit.robust_reprojection: R must be (P, V, 3, 3), got ",
              R.sizes());
  TORCH_CHECK(t.sizes() == at::IntArrayRef({P, V, 3}), "motionkit.robust_reprojection: t ", t.sizes());
  TORCH_CHECK(params.sizes() == at::IntArrayRef({P, V, 8}), "motionkit.robust_reprojection: params ", params.sizes());
  TORCH_CHECK(theta_max.sizes() == at::IntArrayRef({P, V}), "motionkit.robust_reprojection: theta_max ",
              theta_max.sizes());
  TORCH_CHECK(obs.sizes() == at::IntArrayRef({P, M, V, J, 2}), "motionkit.robust_reprojection: obs must be (P, M, V, J, 2), got ",
              obs.sizes());
  TORCH_CHECK(weight.sizes() == at::IntArrayRef({P, M, V, J}), "motionkit.robust_reprojection: weight ",
              weight.sizes());
  TORCH_CHECK(J <= kMaxReprojectionJoints, "motionkit.robust_reprojection: at most ", kMaxReprojectionJoints,
              " joints, got ", J);
  TORCH_CHECK(partner.dim() == 1 && partner.size(0) == J && partner.scalar_type() == at::kLong &&
                  partner.is_contiguous() && partner.device() == joints.device(),
              "motionkit.robust_reprojection: partner must be a contiguous int64 (J,) = (", J, ",) tensor on ",
              joints.device(), ", got ", partner.scalar_type(), " ", partner.sizes(), " on ", partner.device());
  check_same(joints, joints, "joints");
  for (auto& [x, name] : {std::pair<const at::Tensor&, const char*>{R, "R"}, {t, "t"}, {params, "params"},
                          {theta_max, "theta_max"}, {obs, "obs"}, {weight, "weight"}})
    check_same(joints, x, name);
  return {P, M, static_cast<int>(V), static_cast<int>(J)};
}

inline void check_adam_inputs(const at::Tensor& param, const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq,
                              const at::Tensor& grad, const at::Tensor& lr, const at::Tensor& step) {
  TORCH_CHECK(param.is_contiguous() && exp_avg.is_contiguous() && exp_avg_sq.is_contiguous(),
              "motionkit.adam_step_: parameter and moments must be contiguous");
  TORCH_CHECK(exp_avg.sizes() == param.sizes() && exp_avg_sq.sizes() == param.sizes() &&
                  grad.sizes() == param.sizes(),
              "motionkit.adam_step_: shapes of parameter, moments and gradient differ");
  TORCH_CHECK(lr.numel() == 1 && step.numel() == 1, "motionkit.adam_step_: lr and step must have one element");
  TORCH_CHECK(lr.device() == param.device() && step.device() == param.device(),
              "motionkit.adam_step_: lr and step must be on the parameter's device");
  for (auto& [x, name] : {std::pair<const at::Tensor&, const char*>{exp_avg, "exp_avg"}, {exp_avg_sq, "exp_avg_sq"},
                          {grad, "grad"}})
    check_same(param, x, name);
}


struct PriorSizes {
  int64_t P, M;
  int Jn, C, NR, L, NB;
};

inline PriorSizes check_prior_inputs(const at::Tensor& J, const at::Tensor& coco, const at::Tensor& tri,
                                     const at::Tensor& tri_w, const at::Tensor& fm, const at::Tensor& fps,
                                     const at::Tensor& go6, const at::Tensor& rv, const at::Tensor& limits,
                                     const at::Tensor& bones, int64_t n_acc) {
  TORCH_CHECK(J.dim() == 4 && J.size(3) == 3, "motionkit.prior_terms: J must be (P, M, Jn, 3), got ", J.sizes());
  const int64_t P = J.size(0), M = J.size(1), Jn = J.size(2), C = coco.size(0), NR = rv.size(2);
  TORCH_CHECK(coco.dim() == 1 && coco.scalar_type() == at::kLong && coco.is_contiguous() &&
                  coco.device() == J.device(),
              "motionkit.prior_terms: coco must be a contiguous int64 (C,) tensor on the device of J");
  TORCH_CHECK(tri.sizes() == at::IntArrayRef({P, M, C, 3}), "motionkit.prior_terms: tri must be (P, M, C, 3), got ",
              tri.sizes());
  TORCH_CHECK(tri_w.sizes() == at::IntArrayRef({P, M, C}), "motionkit.prior_terms: tri_w ", tri_w.sizes());
  TORCH_CHECK(fm.sizes() == at::IntArrayRef({P, M}), "motionkit.prior_terms: fm ", fm.sizes());
  TORCH_CHECK(fps.sizes() == at::IntArrayRef({P}), "motionkit.prior_terms: fps ", fps.sizes());
  TORCH_CHECK(go6.dim() == 5 && go6.size(0) == P && go6.size(1) == M && go6.size(2) >= 1 && go6.size(3) == 3 &&
                  go6.size(4) == 2,
              "motionkit.prior_terms: rot6d must be (P, M, R, 3, 2), got ", go6.sizes());
  TORCH_CHECK(rv.dim() == 4 && rv.size(0) == P && rv.size(1) == M && rv.size(3) == 3,
              "motionkit.prior_terms: rv must be (P, M, NR, 3), got ", rv.sizes());
  TORCH_CHECK(limits.dim() == 2 && limits.size(1) == 4, "motionkit.prior_terms: limits must be (L, 4), got ",
              limits.sizes());
  TORCH_CHECK(bones.dim() == 2 && bones.size(1) == 6, "motionkit.prior_terms: bones must be (B, 6), got ",
              bones.sizes());
  TORCH_CHECK(n_acc >= 1 && n_acc <= Jn, "motionkit.prior_terms: n_acc ", n_acc, " out of 1..", Jn);
  // index values (coco < Jn, limit joints < NR, bone joints < R, axes < 3) are checked once by the Python
  // wrapper: reading them here would synchronise with the GPU on every call
  check_same(J, J, "J");
  for (auto& [x, name] : {std::pair<const at::Tensor&, const char*>{tri, "tri"}, {tri_w, "tri_w"}, {fm, "fm"},
                          {fps, "fps"}, {go6, "go6"}, {rv, "rv"}, {limits, "limits"}, {bones, "bones"}})
    check_same(J, x, name);
  return {P,
          M,
          static_cast<int>(Jn),
          static_cast<int>(C),
          static_cast<int>(NR),
          static_cast<int>(limits.size(0)),
          static_cast<int>(bones.size(0))};
}

template <typename T>
PriorData<T> prior_data(const at::Tensor& J, const at::Tensor& coco, const at::Tensor& tri, const at::Tensor& tri_w,
                        const at::Tensor& fm, const at::Tensor& go6, const at::Tensor& rv, const at::Tensor& limits,
                        const at::Tensor& bones, const PriorSizes& s, T sigma3, int64_t n_acc) {
  PriorData<T> d;
  d.J = J.data_ptr<T>();
  d.coco = coco.data_ptr<int64_t>();
  d.tri = tri.data_ptr<T>();
  d.tri_w = tri_w.data_ptr<T>();
  d.fm = fm.data_ptr<T>();
  d.go6 = go6.data_ptr<T>();
  d.rv = rv.data_ptr<T>();
  d.limits = limits.data_ptr<T>();
  d.bones = s.NB ? bones.data_ptr<T>() : nullptr;
  d.fps = 0;
  d.sigma3 = sigma3;
  d.M = s.M;
  d.Jn = s.Jn;
  d.C = s.C;
  d.NR = s.NR;
  d.L = s.L;
  d.NB = s.NB;
  d.n_acc = static_cast<int>(n_acc);
  d.R6 = static_cast<int>(go6.size(2));
  return d;
}



struct KnotSizes {
  int64_t P, N, C, M, Cw;
  int E;
};

// values: the parameters (P, N, C) for the forward pass, the gradient (P, M, C) for the backward pass
inline KnotSizes check_knot_inputs(const at::Tensor& values, bool backward, const at::Tensor& index,
                                   const at::Tensor& weight, const at::Tensor& readers, const at::Tensor& reader_ptr) {
  const char* op = backward ? "motionkit.knot_sequence_backward: " : "motionkit.knot_sequence: ";
  TORCH_CHECK(values.dim() == 3 && values.is_contiguous(), op, backward ? "grad" : "params",
              " must be contiguous with 3 dimensions, got ", values.sizes());
  TORCH_CHECK(index.dim() == 2 && index.scalar_type() == at::kLong && index.is_contiguous(), op,
              "index must be contiguous int64 (M, E), got ", index.sizes());
  TORCH_CHECK(reader_ptr.dim() == 1 && reader_ptr.numel() >= 1 && reader_ptr.scalar_type() == at::kLong &&
                  reader_ptr.is_contiguous(),
              op, "reader_ptr must be contiguous int64 with N + 1 entries");
  const int64_t N = backward ? reader_ptr.numel() - 1 : values.size(1);
  const int64_t M = index.size(0), C = values.size(2);
  TORCH_CHECK(reader_ptr.numel() == N + 1, op, "reader_ptr has ", reader_ptr.numel(), " entries, expected ", N + 1);
  TORCH_CHECK(!backward || values.size(1) == M, op, "grad has ", values.size(1), " frames, index ", M);
  TORCH_CHECK(weight.dim() == 3 && weight.size(0) == M && weight.size(1) == index.size(1) &&
                  (weight.size(2) == 1 || weight.size(2) == C),
              op, "weight must have shape (M, E, 1 or C), got ", weight.sizes(), " for index ", index.sizes(),
              " and ", C, " channels");
  check_same(values, weight, "weight");
  TORCH_CHECK(readers.dim() == 1 && readers.numel() == index.numel() && readers.scalar_type() == at::kLong &&
                  readers.is_contiguous(),
              op, "readers must be contiguous int64 with M E entries");
  for (const at::Tensor* x : {&index, &readers, &reader_ptr})
    TORCH_CHECK(x->device() == values.device(), op, "index tensors must be on ", values.device());
  return {values.size(0), N, C, M, weight.size(2), static_cast<int>(index.size(1))};
}


// The backward pass of body_joints: the incoming gradient (checked, contiguous) and the outputs, with the
// betas and kp_delta gradients per frame (N rows; summed over the `per` frames sharing a row afterwards)
struct BodyGrads {
  at::Tensor grad, rot6d, betas, transl, kp_delta;
  int64_t per;
};

inline BodyGrads body_backward_outputs(const at::Tensor& grad_out, const at::Tensor& rot6d, const at::Tensor& betas,
                                       int64_t n_joints, int64_t n_landmarks) {
  const int64_t N = rot6d.size(0);
  auto g = grad_out.contiguous();
  TORCH_CHECK(g.sizes() == at::IntArrayRef({N, n_joints + n_landmarks, 3}), "body_joints_backward: grad of shape ",
              g.sizes());
  return {g,
          at::empty_like(rot6d),
          at::empty({N, betas.size(1)}, rot6d.options()),
          at::empty({N, 3}, rot6d.options()),
          at::empty({N, n_landmarks, 3}, rot6d.options()),
          N / betas.size(0)};
}

// head_motion: J (P, M, R, 3); index (N, 4) int64 rows of the flattened (M R); delta (P, N, 3); weight (P, N)
inline void check_head_motion_inputs(const at::Tensor& J, const at::Tensor& index, const at::Tensor& delta,
                                     const at::Tensor& weight, const at::Tensor& readers,
                                     const at::Tensor& reader_ptr) {
  TORCH_CHECK(J.dim() == 4 && J.size(3) == 3 && J.is_contiguous(),
              "motionkit.head_motion: joints must be contiguous (P, M, R, 3), got ", J.sizes());
  const int64_t P = J.size(0), N = index.size(0);
  TORCH_CHECK(index.dim() == 2 && index.size(1) == 4 && index.scalar_type() == at::kLong && index.is_contiguous() &&
                  index.device() == J.device(),
              "motionkit.head_motion: index must be a contiguous int64 (N, 4) tensor on ", J.device());
  TORCH_CHECK(delta.sizes() == at::IntArrayRef({P, N, 3}) && weight.sizes() == at::IntArrayRef({P, N}),
              "motionkit.head_motion: delta must be (P, N, 3) and weight (P, N), got ", delta.sizes(), " and ",
              weight.sizes());
  check_same(J, delta, "delta");
  check_same(J, weight, "weight");
  TORCH_CHECK(readers.dim() == 1 && readers.numel() == 4 * N && readers.scalar_type() == at::kLong &&
                  readers.is_contiguous() && readers.device() == J.device(),
              "motionkit.head_motion: readers must be a contiguous int64 (4 N) tensor on ", J.device());
  TORCH_CHECK(reader_ptr.dim() == 1 && reader_ptr.scalar_type() == at::kLong && reader_ptr.is_contiguous() &&
                  reader_ptr.device() == J.device(),
              "motionkit.head_motion: reader_ptr must be a contiguous int64 (M R + 1) tensor on ", J.device());
  TORCH_CHECK_VALUE(reader_ptr.numel() == J.size(1) * J.size(2) + 1, "motionkit.head_motion: head rows index a body ",
                    "output of ", reader_ptr.numel() - 1, " rows (M x R), got joints of shape ", J.sizes());
}

}  // namespace mk

// Registers one backend's implementations (functions named <operator>_<backend>) for every operator of
// ops_schema.cpp, so that the CPU and CUDA libraries list the same operators in the same order.
#define MK_IMPLEMENT_OPERATORS(m, backend)                                   \
  m.impl("head_motion", &head_motion_##backend);                           \
  m.impl("head_motion_backward", &head_motion_backward_##backend);         \
  m.impl("body_joints", &body_joints_##backend);                           \
  m.impl("body_joints_backward", &body_joints_backward_##backend);         \
  m.impl("rot6d_to_rotvec", &rot6d_to_rotvec_##backend);                   \
  m.impl("rot6d_to_rotvec_backward", &rot6d_to_rotvec_backward_##backend); \
  m.impl("robust_reprojection", &robust_reprojection_##backend);           \
  m.impl("robust_reprojection_backward", &robust_reprojection_backward_##backend); \
  m.impl("prior_terms", &prior_terms_##backend);                           \
  m.impl("prior_terms_backward", &prior_terms_backward_##backend);         \
  m.impl("adam_step_", &adam_step_##backend);                              \
  m.impl("knot_sequence", &knot_sequence_##backend);                       \
  m.impl("knot_sequence_backward", &knot_sequence_backward_##backend)

