#include "hl_aot.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
extern "C" {
#include "hl_disk.h"
#include "hl_error.h"
}

extern char **environ;

using namespace Halide;

namespace {

/* Runs argv quietly; 0 when it exited 0, 1 when its status is unknown (a host that ignores
 * SIGCHLD reaps its children itself), -1 otherwise. */
int run_quietly(const std::vector<const char *> &argv) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, const_cast<char *const *>(argv.data()), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno == EINTR) continue;
    /* a host that ignores SIGCHLD reaps its children itself: then the output says how it went */
    return errno == ECHILD ? 1 : -1;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* A shared object from an object file: the linker alone (`ld -shared`, 12 ms where the compiler
 * driver costs 30; Halide's objects need no C start-up files), else `cc -shared`. Only Halide's
 * runtime names the C libraries it needs: it is loaded first and globally (hl_aot_ready), so a
 * pipeline's calls into libm resolve through it, and a pipeline links in 2.5 ms instead of 7.5
 * (reading libm's linker script and libraries was most of a link). */
int link_shared(const std::vector<std::string> &objs, const char *so, bool runtime) {
  for (const char *linker : {"ld", "cc"}) {
    std::vector<const char *> argv = {linker, "-shared", "-o", so};
    for (const std::string &o : objs) argv.push_back(o.c_str());
    if (runtime) argv.insert(argv.end(), {"-lm", "-lpthread", "-ldl"});
    argv.push_back(nullptr);
    int rc = run_quietly(argv);
    if (rc == 0 || (rc == 1 && access(so, R_OK) == 0)) return 0;   /* (1: exit status unknown) */
  }
  return -1;
}

std::string file_identity(const void *addr) {
  Dl_info info;
  struct stat st;
  if (!dladdr(addr, &info) || !info.dli_fname || stat(info.dli_fname, &st)) return "?";
  return std::string(info.dli_fname) + ":" + std::to_string((long long)st.st_size) + ":" +
         std::to_string((long long)st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

/* the engine's error, allocation and parallel-loop handlers, on the runtime once it is loaded */
bool install_handlers(void *rt, std::string &why) {
  typedef void (*error_fn)(void *, const char *);
  typedef void *(*malloc_fn)(void *, size_t);
  typedef void (*free_fn)(void *, void *);
  typedef int (*par_for_fn)(void *, int (*)(void *, int, uint8_t *), int, int, uint8_t *);
  auto set_error = (error_fn(*)(error_fn))dlsym(rt, "halide_set_error_handler");
  auto set_malloc = (malloc_fn(*)(malloc_fn))dlsym(rt, "halide_set_custom_malloc");
  auto set_free = (free_fn(*)(free_fn))dlsym(rt, "halide_set_custom_free");
  auto set_par_for = (par_for_fn(*)(par_for_fn))dlsym(rt, "halide_set_custom_do_par_for");
  if (!set_error || !set_malloc || !set_free || !set_par_for) {
    why = "the compiled runtime lacks Halide's handler setters";
    return false;
  }
  set_error(hl_backend_runtime_error);
  set_malloc(hl_backend_runtime_malloc);
  set_free(hl_backend_runtime_free);
  set_par_for(hl_backend_runtime_par_for);
  return true;
}

}  // namespace

/* Halide's library and the target: what the runtime's code depends on */
static std::string runtime_signature(const Target &t) {
  return "halide " + file_identity((const void *)&Halide::load_plugin) + "|" + t.to_string();
}

std::string hl_aot_signature(const Target &t) {
  /* and what the lowering reads besides the IR: halua's build, the matmul choice of
   * HALUA_FUSED_MATMUL, the cores Mullapudi2016 schedules for */
  const char *fused = getenv("HALUA_FUSED_MATMUL");
  return runtime_signature(t) + "|halua " + hl_disk_build_id() + "|fused " + (fused && *fused ? "1" : "0") +
         "|cores " + std::to_string(std::thread::hardware_concurrency());
}

static int aot_state = 0;   /* 0: not tried, 1: ready, -1: failed or given up */
static std::string aot_failure;

void hl_aot_disable(const char *why) {
  aot_state = -1;
  aot_failure = why;
}

bool hl_aot_ready(const Target &t, std::string &why) {
  if (aot_state) {
    why = aot_failure;
    return aot_state > 0;
  }
  aot_state = -1;
  aot_failure = "no usable cache directory";
  if (!hl_disk_dir()) {   /* (hl_disk_dir said why, when there was a reason to) */
    why = aot_failure;
    return false;
  }
  /* set up once per process; a failure is said once, and kernels are JIT-compiled */
  auto fail = [&](const std::string &reason) {
    why = aot_failure = reason;
    fprintf(stderr, "halua: warning: %s; pipelines are JIT-compiled and cached in memory only\n", reason.c_str());
    return false;
  };
  /* pipelines call the engine's extern stages (matmul, sort, LAPACK, transposes) by name: the
   * library that holds them (loaded privately by Lua's require) joins the global scope */
  Dl_info self;
  if (!dladdr((const void *)&hl_aot_ready, &self) || !self.dli_fname ||
      !dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL))
    return fail("the engine library cannot be found for its extern stages");
  /* (one runtime for every build of halua: entries of old builds share it) */
  std::string sig = "runtime|" + runtime_signature(t);
  const unsigned char *key = (const unsigned char *)sig.data();
  char path[4200];
  void *rt = hl_disk_find("runtime-", key, sig.size(), path, sizeof path) == 0 ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : nullptr;
  if (!rt) {
    /* once per machine (about half a second): Halide's runtime for this target, as a library */
    char obj[4200], so[4200];
    if (hl_disk_temp(obj, sizeof obj, ".o")) return fail("no room for a temporary file in the cache directory");
    if (hl_disk_temp(so, sizeof so, ".so")) {
      unlink(obj);
      return fail("no room for a temporary file in the cache directory");
    }
    try {
      compile_standalone_runtime(obj, t.without_feature(Target::JIT).without_feature(Target::NoRuntime));
    } catch (const std::exception &e) {
      unlink(obj);
      unlink(so);
      return fail(std::string("compiling Halide's runtime failed: ") + e.what());
    }
    int linked = link_shared({obj}, so, true);
    unlink(obj);
    if (linked) {
      unlink(so);
      return fail("no linker (ld or cc) could make Halide's runtime a shared object");
    }
    rt = dlopen(so, RTLD_NOW | RTLD_GLOBAL);
    if (!rt) {
      std::string e = dlerror();
      unlink(so);
      return fail("loading Halide's runtime failed: " + e);
    }
    hl_disk_store("runtime-", key, sig.size(), so);
  }
  std::string missing;
  if (!install_handlers(rt, missing)) return fail(missing);
  aot_state = 1;
  aot_failure.clear();
  return true;
}

hl_aot_entry hl_aot_load(const char *path, const std::string &symbol, void **handle) {
  *handle = nullptr;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    hl_error("loading a cached pipeline failed: %s", dlerror());
    return nullptr;
  }
  auto entry = (hl_aot_entry)dlsym(h, (symbol + "_argv").c_str());
  if (!entry) {
    dlclose(h);
    hl_error("a cached pipeline has no entry point %s_argv", symbol.c_str());
    return nullptr;
  }
  *handle = h;   /* loaded until its kernel is freed (evicted from the cache and unused) */
  return entry;
}

hl_aot_entry hl_aot_symbol(void *handle, const std::string &symbol) {
  return handle ? (hl_aot_entry)dlsym(handle, (symbol + "_argv").c_str()) : nullptr;
}

void hl_aot_unload(void *handle) {
  if (handle) dlclose(handle);
}

hl_aot_entry hl_aot_compile(const Module &m, const std::string &symbol, const char *so_path, double *llvm_ms, double *link_ms,
                            void **handle) {
  *handle = nullptr;
  std::string obj = std::string(so_path) + ".o";
  auto t0 = std::chrono::steady_clock::now();
  try {
    m.compile({{OutputFileType::object, obj}});
  } catch (...) {
    unlink(obj.c_str());
    throw;
  }
  *llvm_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  hl_aot_entry entry = hl_aot_link({obj}, symbol, so_path, link_ms, handle);
  unlink(obj.c_str());
  return entry;
}

hl_aot_entry hl_aot_link(const std::vector<std::string> &objs, const std::string &symbol, const char *so_path,
                         double *link_ms, void **handle, bool disable_on_failure) {
  *handle = nullptr;
  auto t1 = std::chrono::steady_clock::now();
  int linked = link_shared(objs, so_path, false);
  hl_aot_entry entry = linked ? nullptr : hl_aot_load(so_path, symbol, handle);
  *link_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  if (!entry && disable_on_failure) {
    /* the disk path does not work here (no linker, a directory mounted noexec): once said, the
     * process JIT-compiles from now on instead of compiling everything twice */
    std::string why = linked ? "linking a compiled pipeline into a shared object (ld or cc) failed" : hl_error_message();
    fprintf(stderr, "halua: warning: %s; pipelines are JIT-compiled and cached in memory only\n", why.c_str());
    hl_aot_disable(why.c_str());
  }
  return entry;
}
