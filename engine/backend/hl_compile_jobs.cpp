/* A cut kernel's parts compiled by several processes (hl_compile_jobs.h). */
#include "hl_compile_jobs.h"
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
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
    if (jobs > 4) jobs = 4;   /* (past 4, a part's share of the link and the fork costs more than it saves) */
  }
  if ((size_t)jobs > nparts) jobs = (int)nparts;
  return jobs < 1 ? 1 : jobs;
}

namespace {

/* worker w's parts, linked into one module and compiled to an object at path (written under
 * another name and renamed: a file at path is whole) */
void compile_share(size_t nparts, int jobs, int w, const std::function<Module(size_t)> &part, const std::string &path) {
  std::vector<Module> modules;
  for (size_t q = (size_t)w; q < nparts; q += (size_t)jobs) modules.push_back(part(q));
  std::string tmp = path + ".part";
  link_modules("hl_parts_w" + std::to_string(w), modules).compile({{OutputFileType::object, tmp}});
  if (rename(tmp.c_str(), path.c_str())) throw std::runtime_error("cannot rename " + tmp);
}

bool has_file(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

}  // namespace

bool hl_compile_parts_in_processes(size_t nparts, int jobs, const std::function<Module(size_t)> &part,
                                   const std::string &prefix, std::vector<std::string> &objs) {
  objs.clear();
  for (int w = 0; w < jobs; w++) objs.push_back(prefix + ".w" + std::to_string(w) + ".o");
  for (const std::string &o : objs) unlink(o.c_str());
  fflush(stdout);
  fflush(stderr);
  std::vector<pid_t> children;
  bool ok = true;
  for (int w = 1; w < jobs; w++) {
    pid_t pid = fork();
    if (pid == 0) {
      int status = 1;
      try {
        compile_share(nparts, jobs, w, part, objs[w]);
        status = 0;
      } catch (...) {
      }
      _exit(status);   /* (no atexit handlers, no destructors: the parent's state is not ours) */
    }
    if (pid < 0) {
      ok = false;
      break;
    }
    children.push_back(pid);
  }
  if (ok) {
    try {
      compile_share(nparts, jobs, 0, part, objs[0]);
    } catch (...) {
      ok = false;
    }
  }
  for (pid_t pid : children) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    /* (a host that ignores SIGCHLD reaps its children itself, and waitpid says ECHILD once they
     * are gone: the files say how they went) */
  }
  for (const std::string &o : objs) ok = ok && has_file(o);
  if (!ok) {
    for (const std::string &o : objs) {
      unlink(o.c_str());
      unlink((o + ".part").c_str());
    }
    objs.clear();
  }
  return ok;
}
