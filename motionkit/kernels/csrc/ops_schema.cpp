// motionkit fused operators: the schemas of namespace motionkit. Built into the CPU library; the CUDA library
// (ops_cuda.cu) registers its implementations for these schemas, so it loads after the CPU one.
#include <torch/library.h>

TORCH_LIBRARY(motionkit, m) {
  m.def(
      "body_joints(Tensor rot6d, Tensor betas, Tensor kp_delta, Tensor transl, Tensor J_template, "
      "Tensor J_shapedirs, Tensor kp_template, Tensor kp_shapedirs, Tensor kp_posedirs, Tensor kp_weights, "
      "Tensor parents) -> Tensor");
  m.def(
      "body_joints_backward(Tensor grad, Tensor rot6d, Tensor betas, Tensor kp_delta, Tensor J_template, "
      "Tensor J_shapedirs, Tensor kp_template, Tensor kp_shapedirs, Tensor kp_posedirs, Tensor kp_weights, "
      "Tensor parents) -> (Tensor, Tensor, Tensor, Tensor)");
  m.def("rot6d_to_rotvec(Tensor rot6d) -> Tensor");
  m.def("knot_sequence(Tensor params, Tensor index, Tensor weight, Tensor readers, Tensor reader_ptr) -> Tensor");
  m.def(
      "knot_sequence_backward(Tensor grad, Tensor index, Tensor weight, Tensor readers, Tensor reader_ptr) -> "
      "Tensor");
  m.def(
      "adam_step_(Tensor(a!) param, Tensor(b!) exp_avg, Tensor(c!) exp_avg_sq, Tensor grad, Tensor lr, Tensor step, "
      "float beta1, float beta2, float eps) -> ()");
  m.def("rot6d_to_rotvec_backward(Tensor grad, Tensor rot6d) -> Tensor");
  m.def(
      "robust_reprojection(Tensor joints, Tensor R, Tensor t, Tensor params, Tensor theta_max, Tensor obs, "
      "Tensor weight, Tensor partner, float sigma) -> (Tensor, Tensor)");
  m.def(
      "prior_terms(Tensor J, Tensor coco, Tensor tri, Tensor tri_w, Tensor fm, Tensor fps, Tensor go6, Tensor rv, "
      "Tensor limits, Tensor bones, float sigma3, int n_acc) -> (Tensor, Tensor)");
  m.def(
      "prior_terms_backward(Tensor grad, Tensor den, Tensor J, Tensor coco, Tensor tri, Tensor tri_w, Tensor fm, "
      "Tensor fps, Tensor go6, Tensor rv, Tensor limits, Tensor bones, float sigma3, int n_acc) -> "
      "(Tensor, Tensor, Tensor)");
  m.def(
      "head_motion(Tensor joints, Tensor index, Tensor delta, Tensor weight, Tensor readers, Tensor reader_ptr, "
      "float sigma) -> Tensor");
  m.def(
      "head_motion_backward(Tensor grad, Tensor joints, Tensor index, Tensor delta, Tensor weight, Tensor readers, "
      "Tensor reader_ptr, float sigma) -> Tensor");
  m.def(
      "robust_reprojection_backward(Tensor grad, Tensor den, Tensor joints, Tensor R, Tensor t, Tensor params, "
      "Tensor theta_max, Tensor obs, Tensor weight, Tensor partner, float sigma) -> Tensor");
}
