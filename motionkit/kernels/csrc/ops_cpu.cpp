// motionkit fused operators: the CPU implementations (schemas: ops_schema.cpp).
// The per-frame math lives in mk_body.h and is shared with the CUDA implementation (ops_cuda.cu).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <vector>

#include "mk_body.h"
#include "mk_checks.h"
#include "mk_knots.h"

namespace {

using mk::BodyData;
using mk::BodyFrame;

// at::parallel_for grain sizes: the fewest items a task takes. A body or prior frame costs microseconds
// (16 frames a task), a reprojection frame tens of them over all views (8), a 6D conversion or a knot row
// a few dozen operations (256, 16 rows of ~130 channels), an Adam element a handful (2048).
constexpr int64_t kFrameGrain = 16, kReprojectionGrain = 8, kRotationGrain = 256, kElementGrain = 2048;

// per-frame partial sums (P, M, 2K) -> (means, denominators), each of shape `shape` (P,) or (P, K)
std::tuple<at::Tensor, at::Tensor> reduce(const at::Tensor& partial, int K, double clamp, at::IntArrayRef shape) {
  auto out = at::empty(shape, partial.options());
  auto den = at::empty(shape, partial.options());
  AT_DISPATCH_FLOATING_TYPES(partial.scalar_type(), "reduce_cpu", [&] {
    const scalar_t* part = partial.data_ptr<scalar_t>();
    scalar_t *o = out.data_ptr<scalar_t>(), *d = den.data_ptr<scalar_t>();
    const int64_t M = partial.size(1);
    at::parallel_for(0, partial.size(0), 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p)
        for (int k = 0; k < K; ++k) mk::reduce_term(part + p * M * 2 * K, M, K, k, clamp, o + p * K, d + p * K);
    });
  });
  return {out, den};
}

at::Tensor body_joints_cpu(const at::Tensor& rot6d, const at::Tensor& betas, const at::Tensor& kp_delta,
                           const at::Tensor& transl, const at::Tensor& J_template, const at::Tensor& J_shapedirs,
                           const at::Tensor& kp_template, const at::Tensor& kp_shapedirs,
                           const at::Tensor& kp_posedirs, const at::Tensor& kp_weights, const at::Tensor& parents) {
  mk::check_body_inputs(rot6d, betas, kp_delta, transl, J_template, J_shapedirs, kp_template, kp_shapedirs,
                        kp_posedirs, kp_weights, parents);
  const int64_t N = rot6d.size(0);
  const int J = J_template.size(0), K = kp_template.size(0);
  auto out = at::empty({N, J + K, 3}, rot6d.options());
  AT_DISPATCH_FLOATING_TYPES(rot6d.scalar_type(), "body_joints_cpu", [&] {
    auto d = mk::body_data<scalar_t>(J_template, J_shapedirs, kp_template, kp_shapedirs, kp_posedirs, kp_weights,
                                     parents, rot6d.size(1));
    const scalar_t* r6 = rot6d.data_ptr<scalar_t>();
    const scalar_t* b = betas.data_ptr<scalar_t>();
    const scalar_t* dl = kp_delta.data_ptr<scalar_t>();
    const scalar_t* tr = transl.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    const int64_t per = N / betas.size(0);  // frames sharing one row of betas (and of kp_delta)
    at::parallel_for(0, N, kFrameGrain, [&](int64_t lo, int64_t hi) {
      BodyFrame<scalar_t> f;
      for (int64_t n = lo; n < hi; ++n) mk::body_forward_item(d, r6, b, dl, tr, o, n, per, f);
    });
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> body_joints_backward_cpu(
    const at::Tensor& grad_out, const at::Tensor& rot6d, const at::Tensor& betas, const at::Tensor& kp_delta,
    const at::Tensor& J_template, const at::Tensor& J_shapedirs, const at::Tensor& kp_template,
    const at::Tensor& kp_shapedirs, const at::Tensor& kp_posedirs, const at::Tensor& kp_weights,
    const at::Tensor& parents) {
  mk::check_body_inputs(rot6d, betas, kp_delta, at::Tensor(), J_template, J_shapedirs, kp_template, kp_shapedirs,
                        kp_posedirs, kp_weights, parents);
  const int64_t N = rot6d.size(0);
  const int K = kp_template.size(0);
  const auto outs = mk::body_backward_outputs(grad_out, rot6d, betas, J_template.size(0), K);
  const at::Tensor &g = outs.grad, &g6 = outs.rot6d, &gb = outs.betas, &gt = outs.transl, &gd = outs.kp_delta;
  const int64_t per = outs.per;
  AT_DISPATCH_FLOATING_TYPES(rot6d.scalar_type(), "body_joints_backward_cpu", [&] {
    auto d = mk::body_data<scalar_t>(J_template, J_shapedirs, kp_template, kp_shapedirs, kp_posedirs, kp_weights,
                                     parents, rot6d.size(1));
    const scalar_t* r6 = rot6d.data_ptr<scalar_t>();
    const scalar_t* b = betas.data_ptr<scalar_t>();
    const scalar_t* dl = kp_delta.data_ptr<scalar_t>();
    const scalar_t* go = g.data_ptr<scalar_t>();
    scalar_t *o6 = g6.data_ptr<scalar_t>(), *ob = gb.data_ptr<scalar_t>(), *ot = gt.data_ptr<scalar_t>();
    scalar_t* od = gd.data_ptr<scalar_t>();
    at::parallel_for(0, N, kFrameGrain, [&](int64_t lo, int64_t hi) {
      BodyFrame<scalar_t> f, gf;
      for (int64_t n = lo; n < hi; ++n) mk::body_backward_item(d, r6, b, dl, go, o6, ob, ot, od, n, per, f, gf);
    });
  });
  if (per == 1) return {g6, gb, gt, gd};
  auto gbp = at::empty_like(betas);
  auto gdp = at::empty_like(kp_delta);
  AT_DISPATCH_FLOATING_TYPES(rot6d.scalar_type(), "body_joints_shared_rows_cpu", [&] {
    const scalar_t *rows = gb.data_ptr<scalar_t>(), *drows = gd.data_ptr<scalar_t>();
    scalar_t *o = gbp.data_ptr<scalar_t>(), *od = gdp.data_ptr<scalar_t>();
    const int B = static_cast<int>(betas.size(1));
    at::parallel_for(0, betas.size(0), 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        for (int b = 0; b < B; ++b) o[p * B + b] = mk::sum_column(rows + p * per * B, per, B, b);
        for (int b = 0; b < K * 3; ++b) od[p * K * 3 + b] = mk::sum_column(drows + p * per * K * 3, per, K * 3, b);
      }
    });
  });
  return {g6, gbp, gt, gdp};
}

at::Tensor rot6d_to_rotvec_cpu(const at::Tensor& rot6d) {
  mk::check_rot6d(rot6d);
  auto out = at::empty({rot6d.size(0), 3}, rot6d.options());
  AT_DISPATCH_FLOATING_TYPES(rot6d.scalar_type(), "rot6d_to_rotvec_cpu", [&] {
    const scalar_t* r6 = rot6d.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, rot6d.size(0), kRotationGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t n = lo; n < hi; ++n) mk::rot6d_to_rotvec_one(r6 + 6 * n, o + 3 * n);
    });
  });
  return out;
}

at::Tensor rot6d_to_rotvec_backward_cpu(const at::Tensor& grad, const at::Tensor& rot6d) {
  mk::check_rot6d(rot6d);
  auto g = grad.contiguous();
  auto out = at::empty_like(rot6d);
  AT_DISPATCH_FLOATING_TYPES(rot6d.scalar_type(), "rot6d_to_rotvec_backward_cpu", [&] {
    const scalar_t* r6 = rot6d.data_ptr<scalar_t>();
    const scalar_t* gr = g.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, rot6d.size(0), kRotationGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t n = lo; n < hi; ++n) mk::rot6d_to_rotvec_one_backward(r6 + 6 * n, gr + 3 * n, o + 6 * n);
    });
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor> robust_reprojection_cpu(const at::Tensor& joints, const at::Tensor& R,
                                                           const at::Tensor& t, const at::Tensor& params,
                                                           const at::Tensor& theta_max, const at::Tensor& obs,
                                                           const at::Tensor& weight, const at::Tensor& partner,
                                                           double sigma) {
  auto s = mk::check_reprojection_inputs(joints, R, t, params, theta_max, obs, weight, partner);
  const int64_t* pa = partner.data_ptr<int64_t>();
  auto partial = at::empty({s.P, s.M, 2}, joints.options());
  AT_DISPATCH_FLOATING_TYPES(joints.scalar_type(), "robust_reprojection_cpu", [&] {
    const scalar_t *X = joints.data_ptr<scalar_t>(), *Rp = R.data_ptr<scalar_t>(), *tp = t.data_ptr<scalar_t>();
    const scalar_t *pp = params.data_ptr<scalar_t>(), *tm = theta_max.data_ptr<scalar_t>();
    const scalar_t *ob = obs.data_ptr<scalar_t>(), *w = weight.data_ptr<scalar_t>();
    scalar_t* part = partial.data_ptr<scalar_t>();
    const int V = s.V, J = s.J;
    at::parallel_for(0, s.P * s.M, kReprojectionGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        mk::reprojection_item(X, Rp, tp, pp, tm, ob, w, pa, i, s.M, V, J, static_cast<scalar_t>(sigma), part);
    });
  });
  return reduce(partial, 1, mk::kReprojectionClamp, {s.P});
}

at::Tensor robust_reprojection_backward_cpu(const at::Tensor& grad, const at::Tensor& den, const at::Tensor& joints,
                                            const at::Tensor& R, const at::Tensor& t, const at::Tensor& params,
                                            const at::Tensor& theta_max, const at::Tensor& obs,
                                            const at::Tensor& weight, const at::Tensor& partner, double sigma) {
  auto s = mk::check_reprojection_inputs(joints, R, t, params, theta_max, obs, weight, partner);
  const int64_t* pa = partner.data_ptr<int64_t>();
  auto g = grad.contiguous();
  auto out = at::empty_like(joints);
  AT_DISPATCH_FLOATING_TYPES(joints.scalar_type(), "robust_reprojection_backward_cpu", [&] {
    const scalar_t *X = joints.data_ptr<scalar_t>(), *Rp = R.data_ptr<scalar_t>(), *tp = t.data_ptr<scalar_t>();
    const scalar_t *pp = params.data_ptr<scalar_t>(), *tm = theta_max.data_ptr<scalar_t>();
    const scalar_t *ob = obs.data_ptr<scalar_t>(), *w = weight.data_ptr<scalar_t>();
    const scalar_t *gp = g.data_ptr<scalar_t>(), *dp = den.data_ptr<scalar_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    const int V = s.V, J = s.J;
    at::parallel_for(0, s.P * s.M, kReprojectionGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        mk::reprojection_backward_item(X, Rp, tp, pp, tm, ob, w, pa, i, s.M, V, J, static_cast<scalar_t>(sigma), gp,
                                       dp, o);
    });
  });
  return out;
}

at::Tensor head_motion_cpu(const at::Tensor& joints, const at::Tensor& index, const at::Tensor& delta,
                           const at::Tensor& weight, const at::Tensor& readers, const at::Tensor& reader_ptr,
                           double sigma) {
  mk::check_head_motion_inputs(joints, index, delta, weight, readers, reader_ptr);
  const int64_t P = joints.size(0), N = index.size(0), per = joints.size(1) * joints.size(2) * 3;
  auto out = at::empty({P, 1}, joints.options());
  AT_DISPATCH_FLOATING_TYPES(joints.scalar_type(), "head_motion_cpu", [&] {
    const scalar_t *X = joints.data_ptr<scalar_t>(), *dp = delta.data_ptr<scalar_t>();
    const scalar_t* wp = weight.data_ptr<scalar_t>();
    const int64_t* ix = index.data_ptr<int64_t>();
    const auto s2 = static_cast<scalar_t>(sigma) * static_cast<scalar_t>(sigma);
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, P, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p)
        o[p] = mk::head_motion_problem(X + p * per, ix, dp + p * N * 3, wp + p * N, N, s2);
    });
  });
  return out;
}

at::Tensor head_motion_backward_cpu(const at::Tensor& grad, const at::Tensor& joints, const at::Tensor& index,
                                    const at::Tensor& delta, const at::Tensor& weight, const at::Tensor& readers,
                                    const at::Tensor& reader_ptr, double sigma) {
  mk::check_head_motion_inputs(joints, index, delta, weight, readers, reader_ptr);
  const int64_t P = joints.size(0), N = index.size(0), rows = joints.size(1) * joints.size(2);
  auto out = at::empty_like(joints);
  auto g = grad.contiguous();
  AT_DISPATCH_FLOATING_TYPES(joints.scalar_type(), "head_motion_backward_cpu", [&] {
    const scalar_t *X = joints.data_ptr<scalar_t>(), *dp = delta.data_ptr<scalar_t>();
    const scalar_t *wp = weight.data_ptr<scalar_t>(), *gp = g.data_ptr<scalar_t>();
    const int64_t *ix = index.data_ptr<int64_t>(), *rd = readers.data_ptr<int64_t>();
    const int64_t* rp = reader_ptr.data_ptr<int64_t>();
    const auto s2 = static_cast<scalar_t>(sigma) * static_cast<scalar_t>(sigma);
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, P * rows, kRotationGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t p = i / rows;
        mk::head_motion_backward_row(X + p * rows * 3, ix, dp + p * N * 3, wp + p * N, rd, rp, i % rows, s2, gp[p],
                                     o + 3 * i);
      }
    });
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor> prior_terms_cpu(const at::Tensor& J, const at::Tensor& coco, const at::Tensor& tri,
                                                   const at::Tensor& tri_w, const at::Tensor& fm,
                                                   const at::Tensor& fps, const at::Tensor& go6, const at::Tensor& rv,
                                                   const at::Tensor& limits, const at::Tensor& bones, double sigma3,
                                                   int64_t n_acc) {
  auto s = mk::check_prior_inputs(J, coco, tri, tri_w, fm, fps, go6, rv, limits, bones, n_acc);
  constexpr int K = mk::kPriorTerms;
  auto partial = at::empty({s.P, s.M, 2 * K}, J.options());
  AT_DISPATCH_FLOATING_TYPES(J.scalar_type(), "prior_terms_cpu", [&] {
    auto d = mk::prior_data<scalar_t>(J, coco, tri, tri_w, fm, go6, rv, limits, bones, s,
                                      static_cast<scalar_t>(sigma3),
                                      n_acc);
    const scalar_t* f = fps.data_ptr<scalar_t>();
    scalar_t* part = partial.data_ptr<scalar_t>();
    at::parallel_for(0, s.P * s.M, kFrameGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) mk::prior_item(d, f, i, part);
    });
  });
  return reduce(partial, K, mk::kPriorClamp, {s.P, K});
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> prior_terms_backward_cpu(
    const at::Tensor& grad, const at::Tensor& den, const at::Tensor& J, const at::Tensor& coco, const at::Tensor& tri,
    const at::Tensor& tri_w, const at::Tensor& fm, const at::Tensor& fps, const at::Tensor& go6, const at::Tensor& rv,
    const at::Tensor& limits, const at::Tensor& bones, double sigma3,
    int64_t n_acc) {
  auto s = mk::check_prior_inputs(J, coco, tri, tri_w, fm, fps, go6, rv, limits, bones, n_acc);
  auto g = grad.contiguous();
  auto gJ = at::empty_like(J);
  auto ggo = at::zeros_like(go6);  // joint 0 (the global orientation) and the bones' joints get a gradient
  auto grv = at::empty_like(rv);
  AT_DISPATCH_FLOATING_TYPES(J.scalar_type(), "prior_terms_backward_cpu", [&] {
    auto d = mk::prior_data<scalar_t>(J, coco, tri, tri_w, fm, go6, rv, limits, bones, s,
                                      static_cast<scalar_t>(sigma3),
                                      n_acc);
    const scalar_t *f = fps.data_ptr<scalar_t>(), *gp = g.data_ptr<scalar_t>(), *dn = den.data_ptr<scalar_t>();
    scalar_t *oJ = gJ.data_ptr<scalar_t>(), *ogo = ggo.data_ptr<scalar_t>(), *orv = grv.data_ptr<scalar_t>();
    at::parallel_for(0, s.P * s.M, kFrameGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) mk::prior_backward_item(d, f, i, gp, dn, oJ, ogo, orv);
    });
  });
  return {gJ, ggo, grv};
}

void adam_step_cpu(at::Tensor& param, at::Tensor& exp_avg, at::Tensor& exp_avg_sq, const at::Tensor& grad,
                   const at::Tensor& lr, const at::Tensor& step, double beta1, double beta2, double eps) {
  mk::check_adam_inputs(param, exp_avg, exp_avg_sq, grad, lr, step);
  auto g = grad.contiguous();
  const double t = step.item<double>(), lr_v = lr.item<double>();  // CPU tensors: no device sync
  AT_DISPATCH_FLOATING_TYPES(param.scalar_type(), "adam_step_cpu", [&] {
    scalar_t *p = param.data_ptr<scalar_t>(), *m = exp_avg.data_ptr<scalar_t>(), *v = exp_avg_sq.data_ptr<scalar_t>();
    const scalar_t* gp = g.data_ptr<scalar_t>();
    const scalar_t b1 = beta1, b2 = beta2, e = eps, l = lr_v;
    const scalar_t bc1 = 1 - std::pow(beta1, t), bc2 = 1 - std::pow(beta2, t);
    at::parallel_for(0, param.numel(), kElementGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) mk::adam_element(p + i, m + i, v + i, gp[i], l, b1, b2, e, bc1, bc2);
    });
  });
}

at::Tensor knot_sequence_cpu(const at::Tensor& params, const at::Tensor& index, const at::Tensor& weight,
                             const at::Tensor& readers, const at::Tensor& reader_ptr) {
  const auto z = mk::check_knot_inputs(params, false, index, weight, readers, reader_ptr);
  auto out = at::empty({z.P, z.M, z.C}, params.options());
  AT_DISPATCH_FLOATING_TYPES(params.scalar_type(), "knot_sequence_cpu", [&] {
    const scalar_t *x = params.data_ptr<scalar_t>(), *w = weight.data_ptr<scalar_t>();
    const int64_t* idx = index.data_ptr<int64_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, z.P * z.M, kFrameGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t p = i / z.M, m = i % z.M;
        mk::knot_sequence_row(x + p * z.N * z.C, idx, w, m, z.E, z.N, z.C, z.Cw, o + i * z.C);
      }
    });
  });
  return out;
}

at::Tensor knot_sequence_backward_cpu(const at::Tensor& grad, const at::Tensor& index, const at::Tensor& weight,
                                      const at::Tensor& readers, const at::Tensor& reader_ptr) {
  auto g = grad.contiguous();
  const auto z = mk::check_knot_inputs(g, true, index, weight, readers, reader_ptr);
  auto out = at::empty({z.P, z.N, z.C}, g.options());
  AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "knot_sequence_backward_cpu", [&] {
    const scalar_t *gr = g.data_ptr<scalar_t>(), *w = weight.data_ptr<scalar_t>();
    const int64_t *rd = readers.data_ptr<int64_t>(), *ptr = reader_ptr.data_ptr<int64_t>();
    scalar_t* o = out.data_ptr<scalar_t>();
    at::parallel_for(0, z.P * z.N, kFrameGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t p = i / z.N, n = i % z.N;
        mk::knot_sequence_backward_row(gr + p * z.M * z.C, rd, ptr, w, n, z.E, z.C, z.Cw, o + i * z.C);
      }
    });
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(motionkit, CPU, m) { MK_IMPLEMENT_OPERATORS(m, cpu); }
