/* CUDA pipelines: the buffers their host code reads get a host copy first.
 *
 * Halide evaluates some expressions of a buffer's values on the host: the bounds of a stage whose
 * coordinates come from a 0-d index (x:at({i}):set(v), a take at a traced position), a condition
 * it hoisted out of the GPU loops (cross_entropy's label range), and the conditions with which
 * it skips a stage whose result a select does not use (nanvar's where(count - ddof <= 0, ...)).
 * Halide 14 reads host memory there without a copy from the device (halide_copy_to_host is
 * inserted for host stages, not for these expressions):
 *  - an input in device memory has no host memory: the read crashed the process. Every input the
 *    host code loads, or hands to a host stage, outside the GPU loops gets hl_input_host_copy
 *    before anything else runs (the pipeline does nothing more when a copy fails: the stage's
 *    failure fails the call); the run frees the copy (hl_kernel_run).
 *  - a scratch buffer computed on the GPU has host memory (Halide saw the host read) but stale
 *    values: a wrong result, different from run to run. Each such buffer gets halide_copy_to_host
 *    right after it is produced. */
#ifndef HL_HOST_READS_H
#define HL_HOST_READS_H
#include <Halide.h>
#include <vector>

void hl_copy_host_reads(Halide::Pipeline &p, const std::vector<Halide::ImageParam> &inputs);
#endif
