/* A cut kernel's parts (hl_partition.h) compiled by several processes at once.
 *
 * Halide's compiler keeps global state and is not thread-safe (the engine compiles under one
 * lock), but the parts of a cut program are independent pipelines: each worker takes the next part
 * not yet taken (a counter in shared memory) and lowers and compiles it into an object file of
 * its own, worker 0 in this process and the others in forked children (which only compile and
 * write their files, then _exit), and the objects are loaded together as the kernel's one image
 * (hl_objload.h). Only the disk cache's ahead-of-time path
 * uses it (a JIT-compiled part lives in the process that compiled it). Any failure of a child (a
 * fork refused, a compile error, a missing or short file) gives false, and the caller compiles
 * the parts here, one after another, as it always did. */
#ifndef HL_COMPILE_JOBS_H
#define HL_COMPILE_JOBS_H
#include <Halide.h>
#include <functional>
#include <string>
#include <vector>

/* How many processes compile a kernel of nparts parts: HALUA_COMPILE_JOBS (1: this process
 * alone), else the cores this process may run on, at most 4 and at most nparts. */
int hl_compile_jobs(size_t nparts);

/* part(q) gives part q's module (its function named for q). The objects written, one per part,
 * are `prefix`.p<q>.o; true and their paths in objs when every part's is there. */
bool hl_compile_parts_in_processes(size_t nparts, int jobs, const std::function<Halide::Module(size_t)> &part,
                                   const std::string &prefix, std::vector<std::string> &objs);
#endif
