// motionkit fused operators: CUDA implementations (one thread per frame), registered for the CUDA
// dispatch key of the schemas defined in ops_schema.cpp. The math is the CPU's (mk_body.h).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "mk_body.h"
#include "mk_checks.h"
#include "mk_knots.h"

namespace {

constexpr int kThreads = 128;  // threads per block of the element-wise kernels
constexpr int kFrameThreads = 32;  // of the body kernels (a whole kinematic chain per thread)

inline int blocks_for(int64_t n, int threads) { return static_cast<int>((n + threads - 1) / threads); }

template <typename T>
__global__ void body_forward_kernel(mk::BodyData<T> d, const T* r6, const T* betas, const T* kp_delta,
                                    const T* transl, T* out, int64_t N, int64_t per) {
  const int64_t n = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (n >= N) return;
  mk::BodyFrame<T> f;
  mk::body_forward_item(d, r6, betas, kp_delta, transl, out, n, per, f);
}

template <typename T>
__global__ void body_backward_kernel(mk::BodyData<T> d, const T* r6, const T* betas, const T* kp_delta,
                                     const T* gout, T* g6, T* gb, T* gt, T* gd, int64_t N, int64_t per) {
  const int64_t n = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (n >= N) return;
  mk::BodyFrame<T> f, g;
  mk::body_backward_item(d, r6, betas, kp_delta, gout, g6, gb, gt, gd, n, per, f, g);
}

template <typename T>
__global__ void knot_sequence_kernel(const T* params, const int64_t* index, const T* weight, T* out, int64_t total,
                                     int64_t N, int64_t M, int64_t C, int64_t Cw, int E) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;  // (p, m, c)
  if (i >= total) return;
  const int64_t c = i % C, m = (i / C) % M, p = i / (C * M);
  out[i] = mk::knot_sequence_element(params + p * N * C, index, weight, m, c, E, N, C, Cw);
}

template <typename T>
__global__ void knot_sequence_backward_kernel(const T* grad, const int64_t* readers, const int64_t* reader_ptr,
                                              const T* weight, T* out, int64_t total, int64_t N, int64_t M, int64_t C,
                                              int64_t Cw, int E) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;  // (p, n, c)
  if (i >= total) return;
  const int64_t c = i % C, n = (i / C) % N, p = i / (C * N);
  out[i] = mk::knot_sequence_backward_element(grad + p * M * C, readers, reader_ptr, weight, n, c, E, C, Cw);
}

template <typename T>
__global__ void rotvec_kernel(const T* r6, T* out, int64_t N) {
  const int64_t n = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (n < N) mk::rot6d_to_rotvec_one(r6 + 6 * n, out + 3 * n);
}

template <typename T>
__global__ void rotvec_backward_kernel(const T* r6, const T* g, T* out, int64_t N) {
  const int64_t n = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (n < N) mk::rot6d_to_rotvec_one_backward(r6 + 6 * n, g + 3 * n, out + 6 * n);
}

template <typename T>
__global__ void reprojection_kernel(const T* X, const T* R, const T* t, const T* prm, const T* tmax, const T* obs,
                                    const T* w, const int64_t* partner, int64_t PM, int64_t M, int V, int J, T sigma,
                                    T* part) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < PM) mk::reprojection_item(X, R, t, prm, tmax, obs, w, partner, i, M, V, J, sigma, part);
}

template <typename T>
__global__ void reprojection_backward_kernel(const T* X, const T* R, const T* t, const T* prm, const T* tmax,
                                             const T* obs, const T* w, const int64_t* partner, int64_t PM,
                                             int64_t M, int V, int J, T sigma, const T* grad, const T* den, T* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < PM) mk::reprojection_backward_item(X, R, t, prm, tmax, obs, w, partner, i, M, V, J, sigma, grad, den, out);
}

template <typename T>
__global__ void head_pair_kernel(const T* X, const int64_t* index, const T* delta, const T* w, int64_t P, int64_t N,
                                 int64_t per, T s2, T* partial) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= P * N) return;
  const int64_t p = i / N, n = i % N;
  partial[i] = mk::head_pair_term(X + p * per, index + 4 * n, delta + 3 * i, w[i], s2);
}

template <typename T>
__global__ void head_sum_kernel(const T* partial, int64_t P, int64_t N, T* out) {
  const int64_t p = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (p < P) out[p] = mk::head_motion_sum(partial + p * N, N);
}

template <typename T>
__global__ void head_motion_backward_kernel(const T* X, const int64_t* index, const T* delta, const T* w,
                                            const int64_t* readers, const int64_t* reader_ptr, int64_t P, int64_t N,
                                            int64_t rows, T s2, const T* grad, T* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;  // one per problem and row
  if (i >= P * rows) return;
  const int64_t p = i / rows;
  mk::head_motion_backward_row(X + p * rows * 3, index, delta + p * N * 3, w + p * N, readers, reader_ptr, i % rows,
                               s2, grad[p], out + 3 * i);
}

template <typename T>
__global__ void prior_kernel(mk::PriorData<T> d, const T* fps, int64_t P, T* part) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < P * d.M) mk::prior_item(d, fps, i, part);
}

template <typename T>
__global__ void prior_backward_kernel(mk::PriorData<T> d, const T* fps, int64_t P, const T* grad, const T* den, T* gJ,
                                      T* ggo, T* grv) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < P * d.M) mk::prior_backward_item(d, fps, i, grad, den, gJ, ggo, grv);
}

template <typename T>
__global__ void reduce_kernel(const T* part, int64_t P, int64_t M, int K, double clamp, T* out, T* den) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;  // one per problem and term
  if (i >= P * K) return;
  const int64_t p = i / K;
  mk::reduce_term(part + p * M * 2 * K, M, K, static_cast<int>(i % K), clamp, out + p * K, den + p * K);
}

template <typename T>
__global__ void sum_rows_kernel(const T* rows, int64_t P, int64_t per, int B, T* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;  // one per problem and column
  if (i < P * B) out[i] = mk::sum_column(rows + (i / B) * per * B, per, B, static_cast<int>(i % B));
}

template <typename T>
__global__ void adam_kernel(T* p, T* m, T* v, const T* g, const T* lr, const T* step, int64_t n, T b1, T b2, T eps) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const T t = *step;  // read from device memory: a CUDA graph replays the update with the current step
  mk::adam_element(p + i, m + i, v + i, g[i], *lr, b1, b2, eps, T(1) - pow(b1, t), T(1) - pow(b2, t));
}

#define MK_LAUNCH_WITH(threads, kernel, n, ...)                                                    \
  if ((n) > 0) {                                                                                   \
    kernel<<<blocks_for(n, threads), threads, 0, c10::cuda::getCurrentCUDAStream()>>>(__VA_ARGS__); \
    C10_CUDA_KERNEL_LAUNCH_CHECK();                                                                \
  }
#define MK_LAUNCH(kernel, n, ...) MK_LAUNCH_WITH(kThreads, kernel, n, __VA_ARGS__)

// per-frame partial sums (P, M, 2K) -> (means, denominators), each of shape `shape` (P,) or (P, K)
std::tuple<at::Tensor, at::Tensor> reduce(const at::Tensor& partial, int K, double clamp, at::IntArrayRef shape) {
  auto out = at::empty(shape, partial.options());
  auto den = at::empty(shape, partial.options());
  AT_DISPATCH_FLOATING_TYPES(partial.scalar_type(), "reduce_cuda", [&] {
    MK_LAUNCH(reduce_kernel<scalar_t>, partial.size(0) * K, partial.data_ptr<scalar_t>(), partial.size(0),
              partial.size(1), K, clamp, out.data_ptr<scalar_t>(), den.data_ptr<scalar_t>());
  });
  return {out, den};
}

at::Tensor body_joints_cuda(const at::Tensor& rot6d, const at::Tensor& betas, const at::Tensor& kp_delta,
                            const at::Tensor& transl, const at::Tensor& J_template, const at::Tensor& J_shapedirs,
                            const at::Tensor& kp_template, const at::Tensor& kp_shapedirs,
                            const at::Tensor& kp_posedirs, const at::Tensor& kp_weights, const at::Tensor& parents) {
  mk::check_body_inputs(rot6d, betas, kp_delta, transl, J_template, J_shapedirs, kp_template, kp_shapedirs,
                        kp_posedirs, kp_weights, parents);
  c10::cuda::CUDAGuard guard(rot6d.device());
  const int64_t N = rot6d.size(0);
  const int J = J_template.size(0), K = kp_template.size(0);
  auto out = at::empty({N, J + K, 3}, rot6d.options());
  AT_DISPATCH_FLOATING_TYPES(rot6d.scalar_type(), "body_joints_cuda", [&] {
    auto d = mk::body_data<scalar_t>(J_template, J_shapedirs, kp_template, kp_shapedirs, kp_posedirs, kp_weights,
                                     parents, rot6d.size(1));
    MK_LAUNCH_WITH(kFrameThreads, body_forward_kernel<scalar_t>, N, d, rot6d.data_ptr<scalar_t>(),
                   betas.data_ptr<scalar_t>(), kp_delta.data_ptr<scalar_t>(), transl.data_ptr<scalar_t>(),
                   out.data_ptr<scalar_t>(), N, N / betas.size(0));
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> body_joints_backward_cuda(
    const at::Tensor& grad_out, const at::Tensor& rot6d, const at::Tensor& betas, const at::Tensor& kp_delta,
    const at::Tensor& J_template, const at::Tensor& J_shapedirs, const at::Tensor& kp_template,
    const at::Tensor& kp_shapedirs, const at::Tensor& kp_posedirs, const at::Tensor& kp_weights,
    const at::Tensor& parents) {
  mk::check_body_inputs(rot6d, betas, kp_delta, at::Tensor(), J_template, J_shapedirs, kp_template, kp_shapedirs,
                        kp_posedirs, kp_weights, parents);
  c10::cuda::CUDAGuard guard(rot6d.device());
  const int64_t N = rot6d.size(0);
  const int64_t K = kp_template.size(0);
  const auto outs = mk::body_backward_outputs(grad_out, rot6d, betas, J_template.size(0), K);
  const at::Tensor &g = outs.grad, &g6 = outs.rot6d, &gb = outs.betas, &gt = outs.transl, &gd = outs.kp_delta;
  const int64_t per = outs.per;
  AT_DISPATCH_FLOATING_TYPES(rot6d.scalar_type(), "body_joints_backward_cuda", [&] {
    auto d = mk::body_data<scalar_t>(J_template, J_shapedirs, kp_template, kp_shapedirs, kp_posedirs, kp_weights,
                                     parents, rot6d.size(1));
    MK_LAUNCH_WITH(kFrameThreads, body_backward_kernel<scalar_t>, N, d, rot6d.data_ptr<scalar_t>(),
                   betas.data_ptr<scalar_t>(), kp_delta.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(),
                   g6.data_ptr<scalar_t>(), gb.data_ptr<scalar_t>(), gt.data_ptr<scalar_t>(), gd.data_ptr<scalar_t>(),
                   N, per);
  });
  if (per == 1) return {g6, gb, gt, gd};
  auto gbp = at::empty_like(betas);
  auto gdp = at::empty_like(kp_delta);
  AT_DISPATCH_FLOATING_TYPES(rot6d.scalar_type(), "body_joints_shared_rows_cuda", [&] {
    MK_LAUNCH(sum_rows_kernel<scalar_t>, betas.size(0) * betas.size(1), gb.data_ptr<scalar_t>(), betas.size(0),
              per, static_cast<int>(betas.size(1)), gbp.data_ptr<scalar_t>());
    MK_LAUNCH(sum_rows_kernel<scalar_t>, betas.size(0) * K * 3, gd.data_ptr<scalar_t>(), betas.size(0), per,
              static_cast<int>(K * 3), gdp.data_ptr<scalar_t>());
  });
  return {g6, gbp, gt, gdp};
}

at::Tensor rot6d_to_rotvec_cuda(const at::Tensor& rot6d) {
  mk::check_rot6d(rot6d);
  c10::cuda::CUDAGuard guard(rot6d.device());
  auto out = at::empty({rot6d.size(0), 3}, rot6d.options());
  AT_DISPATCH_FLOATING_TYPES(rot6d.scalar_type(), "rot6d_to_rotvec_cuda", [&] {
    MK_LAUNCH(rotvec_kernel<scalar_t>, rot6d.size(0), rot6d.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
              rot6d.size(0));
  });
  return out;
}

at::Tensor rot6d_to_rotvec_backward_cuda(const at::Tensor& grad, const at::Tensor& rot6d) {
  mk::check_rot6d(rot6d);
  c10::cuda::CUDAGuard guard(rot6d.device());
  auto g = grad.contiguous();
  auto out = at::empty_like(rot6d);
  AT_DISPATCH_FLOATING_TYPES(rot6d.scalar_type(), "rot6d_to_rotvec_backward_cuda", [&] {
    MK_LAUNCH(rotvec_backward_kernel<scalar_t>, rot6d.size(0), rot6d.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(),
              out.data_ptr<scalar_t>(), rot6d.size(0));
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor> robust_reprojection_cuda(const at::Tensor& joints, const at::Tensor& R,
                                                            const at::Tensor& t, const at::Tensor& params,
                                                            const at::Tensor& theta_max, const at::Tensor& obs,
                                                            const at::Tensor& weight, const at::Tensor& partner,
                                                            double sigma) {
  auto s = mk::check_reprojection_inputs(joints, R, t, params, theta_max, obs, weight, partner);
  c10::cuda::CUDAGuard guard(joints.device());
  auto partial = at::empty({s.P, s.M, 2}, joints.options());
  AT_DISPATCH_FLOATING_TYPES(joints.scalar_type(), "robust_reprojection_cuda", [&] {
    MK_LAUNCH(reprojection_kernel<scalar_t>, s.P * s.M, joints.data_ptr<scalar_t>(), R.data_ptr<scalar_t>(),
              t.data_ptr<scalar_t>(), params.data_ptr<scalar_t>(), theta_max.data_ptr<scalar_t>(),
              obs.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(), partner.data_ptr<int64_t>(), s.P * s.M, s.M,
              s.V, s.J, static_cast<scalar_t>(sigma), partial.data_ptr<scalar_t>());
  });
  return reduce(partial, 1, mk::kReprojectionClamp, {s.P});
}

at::Tensor robust_reprojection_backward_cuda(const at::Tensor& grad, const at::Tensor& den, const at::Tensor& joints,
                                             const at::Tensor& R, const at::Tensor& t, const at::Tensor& params,
                                             const at::Tensor& theta_max, const at::Tensor& obs,
                                             const at::Tensor& weight, const at::Tensor& partner, double sigma) {
  auto s = mk::check_reprojection_inputs(joints, R, t, params, theta_max, obs, weight, partner);
  c10::cuda::CUDAGuard guard(joints.device());
  auto g = grad.contiguous();
  auto out = at::empty_like(joints);
  AT_DISPATCH_FLOATING_TYPES(joints.scalar_type(), "robust_reprojection_backward_cuda", [&] {
    MK_LAUNCH(reprojection_backward_kernel<scalar_t>, s.P * s.M, joints.data_ptr<scalar_t>(), R.data_ptr<scalar_t>(),
              t.data_ptr<scalar_t>(), params.data_ptr<scalar_t>(), theta_max.data_ptr<scalar_t>(),
              obs.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(), partner.data_ptr<int64_t>(), s.P * s.M, s.M,
              s.V, s.J, static_cast<scalar_t>(sigma), g.data_ptr<scalar_t>(), den.data_ptr<scalar_t>(),
              out.data_ptr<scalar_t>());
  });
  return out;
}

at::Tensor head_motion_cuda(const at::Tensor& joints, const at::Tensor& index, const at::Tensor& delta,
                            const at::Tensor& weight, const at::Tensor& readers, const at::Tensor& reader_ptr,
                            double sigma) {
  mk::check_head_motion_inputs(joints, index, delta, weight, readers, reader_ptr);
  c10::cuda::CUDAGuard guard(joints.device());
  const int64_t P = joints.size(0), N = index.size(0), per = joints.size(1) * joints.size(2) * 3;
  auto out = at::empty({P, 1}, joints.options());
  auto partial = at::empty({P, N}, joints.options());  // each pair's share, one thread each; then summed in order
  AT_DISPATCH_FLOATING_TYPES(joints.scalar_type(), "head_motion_cuda", [&] {
    const auto s2 = static_cast<scalar_t>(sigma) * static_cast<scalar_t>(sigma);
    MK_LAUNCH(head_pair_kernel<scalar_t>, P * N, joints.data_ptr<scalar_t>(), index.data_ptr<int64_t>(),
              delta.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(), P, N, per, s2, partial.data_ptr<scalar_t>());
    MK_LAUNCH(head_sum_kernel<scalar_t>, P, partial.data_ptr<scalar_t>(), P, N, out.data_ptr<scalar_t>());
  });
  return out;
}

at::Tensor head_motion_backward_cuda(const at::Tensor& grad, const at::Tensor& joints, const at::Tensor& index,
                                     const at::Tensor& delta, const at::Tensor& weight, const at::Tensor& readers,
                                     const at::Tensor& reader_ptr, double sigma) {
  mk::check_head_motion_inputs(joints, index, delta, weight, readers, reader_ptr);
  c10::cuda::CUDAGuard guard(joints.device());
  const int64_t P = joints.size(0), N = index.size(0), rows = joints.size(1) * joints.size(2);
  auto out = at::empty_like(joints);
  auto g = grad.contiguous();
  AT_DISPATCH_FLOATING_TYPES(joints.scalar_type(), "head_motion_backward_cuda", [&] {
    const auto s2 = static_cast<scalar_t>(sigma) * static_cast<scalar_t>(sigma);
    MK_LAUNCH(head_motion_backward_kernel<scalar_t>, P * rows, joints.data_ptr<scalar_t>(),
              index.data_ptr<int64_t>(), delta.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(),
              readers.data_ptr<int64_t>(), reader_ptr.data_ptr<int64_t>(), P, N, rows, s2, g.data_ptr<scalar_t>(),
              out.data_ptr<scalar_t>());
  });
  return out;
}

std::tuple<at::Tensor, at::Tensor> prior_terms_cuda(const at::Tensor& J, const at::Tensor& coco, const at::Tensor& tri,
                                                    const at::Tensor& tri_w, const at::Tensor& fm,
                                                    const at::Tensor& fps, const at::Tensor& go6, const at::Tensor& rv,
                                                    const at::Tensor& limits, const at::Tensor& bones, double sigma3,
                                                    int64_t n_acc) {
  auto s = mk::check_prior_inputs(J, coco, tri, tri_w, fm, fps, go6, rv, limits, bones, n_acc);
  c10::cuda::CUDAGuard guard(J.device());
  auto partial = at::empty({s.P, s.M, 2 * mk::kPriorTerms}, J.options());
  AT_DISPATCH_FLOATING_TYPES(J.scalar_type(), "prior_terms_cuda", [&] {
    auto d = mk::prior_data<scalar_t>(J, coco, tri, tri_w, fm, go6, rv, limits, bones, s,
                                      static_cast<scalar_t>(sigma3),
                                      n_acc);
    MK_LAUNCH(prior_kernel<scalar_t>, s.P * s.M, d, fps.data_ptr<scalar_t>(), s.P, partial.data_ptr<scalar_t>());
  });
  return reduce(partial, mk::kPriorTerms, mk::kPriorClamp, {s.P, mk::kPriorTerms});
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> prior_terms_backward_cuda(
    const at::Tensor& grad, const at::Tensor& den, const at::Tensor& J, const at::Tensor& coco, const at::Tensor& tri,
    const at::Tensor& tri_w, const at::Tensor& fm, const at::Tensor& fps, const at::Tensor& go6, const at::Tensor& rv,
    const at::Tensor& limits, const at::Tensor& bones, double sigma3,
    int64_t n_acc) {
  auto s = mk::check_prior_inputs(J, coco, tri, tri_w, fm, fps, go6, rv, limits, bones, n_acc);
  c10::cuda::CUDAGuard guard(J.device());
  auto g = grad.contiguous();
  auto gJ = at::empty_like(J);
  auto ggo = at::zeros_like(go6);  // joint 0 (the global orientation) and the bones' joints get a gradient
  auto grv = at::empty_like(rv);
  AT_DISPATCH_FLOATING_TYPES(J.scalar_type(), "prior_terms_backward_cuda", [&] {
    auto d = mk::prior_data<scalar_t>(J, coco, tri, tri_w, fm, go6, rv, limits, bones, s,
                                      static_cast<scalar_t>(sigma3),
                                      n_acc);
    MK_LAUNCH(prior_backward_kernel<scalar_t>, s.P * s.M, d, fps.data_ptr<scalar_t>(), s.P,
              g.data_ptr<scalar_t>(), den.data_ptr<scalar_t>(), gJ.data_ptr<scalar_t>(), ggo.data_ptr<scalar_t>(), grv.data_ptr<scalar_t>());
  });
  return {gJ, ggo, grv};
}

void adam_step_cuda(at::Tensor& param, at::Tensor& exp_avg, at::Tensor& exp_avg_sq, const at::Tensor& grad,
                    const at::Tensor& lr, const at::Tensor& step, double beta1, double beta2, double eps) {
  mk::check_adam_inputs(param, exp_avg, exp_avg_sq, grad, lr, step);
  c10::cuda::CUDAGuard guard(param.device());
  auto g = grad.contiguous();
  auto lr_t = lr.to(param.scalar_type());
  auto step_t = step.to(param.scalar_type());
  AT_DISPATCH_FLOATING_TYPES(param.scalar_type(), "adam_step_cuda", [&] {
    MK_LAUNCH(adam_kernel<scalar_t>, param.numel(), param.data_ptr<scalar_t>(), exp_avg.data_ptr<scalar_t>(),
              exp_avg_sq.data_ptr<scalar_t>(), g.data_ptr<scalar_t>(), lr_t.data_ptr<scalar_t>(),
              step_t.data_ptr<scalar_t>(), param.numel(), static_cast<scalar_t>(beta1), static_cast<scalar_t>(beta2),
              static_cast<scalar_t>(eps));
  });
}

at::Tensor knot_sequence_cuda(const at::Tensor& params, const at::Tensor& index, const at::Tensor& weight,
                              const at::Tensor& readers, const at::Tensor& reader_ptr) {
  const auto z = mk::check_knot_inputs(params, false, index, weight, readers, reader_ptr);
  c10::cuda::CUDAGuard guard(params.device());
  auto out = at::empty({z.P, z.M, z.C}, params.options());
  AT_DISPATCH_FLOATING_TYPES(params.scalar_type(), "knot_sequence_cuda", [&] {
    MK_LAUNCH(knot_sequence_kernel<scalar_t>, out.numel(), params.data_ptr<scalar_t>(), index.data_ptr<int64_t>(),
              weight.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), out.numel(), z.N, z.M, z.C, z.Cw, z.E);
  });
  return out;
}

at::Tensor knot_sequence_backward_cuda(const at::Tensor& grad, const at::Tensor& index, const at::Tensor& weight,
                                       const at::Tensor& readers, const at::Tensor& reader_ptr) {
  auto g = grad.contiguous();
  const auto z = mk::check_knot_inputs(g, true, index, weight, readers, reader_ptr);
  c10::cuda::CUDAGuard guard(g.device());
  auto out = at::empty({z.P, z.N, z.C}, g.options());
  AT_DISPATCH_FLOATING_TYPES(g.scalar_type(), "knot_sequence_backward_cuda", [&] {
    MK_LAUNCH(knot_sequence_backward_kernel<scalar_t>, out.numel(), g.data_ptr<scalar_t>(),
              readers.data_ptr<int64_t>(), reader_ptr.data_ptr<int64_t>(), weight.data_ptr<scalar_t>(),
              out.data_ptr<scalar_t>(), out.numel(), z.N, z.M, z.C, z.Cw, z.E);
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(motionkit, CUDA, m) { MK_IMPLEMENT_OPERATORS(m, cuda); }
