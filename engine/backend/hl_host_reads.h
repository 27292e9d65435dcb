/* CUDA pipelines: the inputs their host code reads get a host copy first.
 *
 * Halide evaluates some expressions of an input's values on the host: the bounds of a stage whose
 * coordinates come from a 0-d index (x:at({i}):set(v), a take at a traced position), or a
 * condition it hoisted out of the GPU loops (cross_entropy's label range). It reads the input's
 * host memory there without a copy from the device (halide_copy_to_host is inserted for host
 * stages, not for these expressions), and an input in device memory has none: the read crashed
 * the process. The pass finds every input the host code loads, or hands to a host stage, outside
 * the GPU loops, and calls hl_input_host_copy on it before anything else runs (the pipeline does
 * nothing more when a copy fails: the stage's failure fails the call); the run frees the copy
 * (hl_kernel_run). */
#ifndef HL_HOST_READS_H
#define HL_HOST_READS_H
#include <Halide.h>
#include <vector>

void hl_copy_host_read_inputs(Halide::Pipeline &p, const std::vector<Halide::ImageParam> &inputs);
#endif
