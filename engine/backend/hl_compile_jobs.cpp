/* A cut kernel's parts compiled by several processes (hl_compile_jobs.h). */
#include "hl_compile_jobs.h"
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>

using namespace Halide;

int hl_compile_jobs(size_t nparts) {
  int jobs = 0;
  if (const char *e = getenv("HALUA_COMPILE_JOBS")) {
    char *end = nullptr;
    long v = strtol(e, &end, 10);
    if (*e && end && *end == 0 && v >= 1 && v <= 64) {
      jobs = (int)v;
    } else {
      static std::once_flag once;   /* (said once per process) */
      std::call_once(once, [e] {
        fprintf(stderr, "halua: warning: HALUA_COMPILE_JOBS=%s is not a whole number from 1 to 64; the default is used\n", e);
      });
    }
  }
  if (jobs <= 0) {
    cpu_set_t set;
    jobs = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs > 4) jobs = 4;   /* (a bound, not a measured best: each child copies the compiler's memory, and only 2 cores were measured) */
  }
  if ((size_t)jobs > nparts) jobs = (int)nparts;
  return jobs < 1 ? 1 : jobs;
}

namespace {

/* part q compiled to an object at path (written under another name and renamed: a file at path
 * is whole) */
void compile_part(size_t q, const std::function<Module(size_t)> &part, const std::string &path) {
  std::string tmp = path + ".part";
  part(q).compile({{OutputFileType::object, tmp}});
  if (rename(tmp.c_str(), path.c_str())) throw std::runtime_error("cannot rename " + tmp);
}

/* a worker's loop: the next part not yet taken, until none is left (parts differ in cost: a
 * shared counter balances them where a fixed share left one worker with most of the work) */
bool work(std::atomic<size_t> *next, size_t nparts, const std::function<Module(size_t)> &part,
          const std::vector<std::string> &objs) {
  try {
    for (size_t q; (q = next->fetch_add(1)) < nparts;) compile_part(q, part, objs[q]);
    return true;
  } catch (...) {
    return false;
  }
}

bool has_file(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

}  // namespace

bool hl_compile_parts_in_processes(size_t nparts, int jobs, const std::function<Module(size_t)> &part,
                                   const std::string &prefix, std::vector<std::string> &objs) {
  objs.clear();
  for (size_t q = 0; q < nparts; q++) objs.push_back(prefix + ".p" + std::to_string(q) + ".o");
  for (const std::string &o : objs) unlink(o.c_str());
  /* the counter the workers share: memory that stays shared across fork */
  void *shared = mmap(nullptr, sizeof(std::atomic<size_t>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return false;
  std::atomic<size_t> *next = new (shared) std::atomic<size_t>(0);
  fflush(stdout);
  fflush(stderr);
  std::vector<pid_t> children;
  for (int w = 1; w < jobs; w++) {
    pid_t pid = fork();
    if (pid == 0) _exit(work(next, nparts, part, objs) ? 0 : 1);   /* (no atexit handlers, no destructors: the parent's state is not ours) */
    if (pid < 0) break;   /* (fewer workers: the others take the rest) */
    children.push_back(pid);
  }
  auto t0 = std::chrono::steady_clock::now();
  bool ok = work(next, nparts, part, objs);
  /* The children end about when this process does (the counter shares the work out): one that is
   * not done a minute later, and four times this process's own time, is taken as stuck (a lock
   * another thread held at the fork) and killed, and the parts are compiled here instead. (A
   * host that reaps its children itself makes waitpid say ECHILD: the files say how they went.) */
  double own = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(60 + 4 * own);
  for (pid_t pid : children) {
    for (;;) {
      int status = 0;
      pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR)) break;
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        ok = false;
        break;
      }
      usleep(2000);
    }
  }
  munmap(shared, sizeof(std::atomic<size_t>));
  for (const std::string &o : objs) {
    ok = ok && has_file(o);
    unlink((o + ".part").c_str());   /* (a killed or failed compile's unfinished file) */
  }
  if (!ok) {
    for (const std::string &o : objs) unlink(o.c_str());
    objs.clear();
  }
  return ok;
}
