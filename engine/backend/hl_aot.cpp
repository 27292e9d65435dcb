#include "hl_aot.h"
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
#include "hl_objload.h"
extern "C" {
#include "hl_disk.h"
#include "hl_error.h"
}

using namespace Halide;

namespace {

std::string file_identity(const void *addr) {
  Dl_info info;
  struct stat st;
  if (!dladdr(addr, &info) || !info.dli_fname || stat(info.dli_fname, &st)) return "?";
  return std::string(info.dli_fname) + ":" + std::to_string((long long)st.st_size) + ":" +
         std::to_string((long long)st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

/* the engine's error, allocation and parallel-loop handlers, on the runtime once it is loaded */
bool install_handlers(const hl_objimage *rt, std::string &why) {
  typedef void (*error_fn)(void *, const char *);
  typedef void *(*malloc_fn)(void *, size_t);
  typedef void (*free_fn)(void *, void *);
  typedef int (*par_for_fn)(void *, int (*)(void *, int, uint8_t *), int, int, uint8_t *);
  auto set_error = (error_fn(*)(error_fn))hl_objload_symbol(rt, "halide_set_error_handler");
  auto set_malloc = (malloc_fn(*)(malloc_fn))hl_objload_symbol(rt, "halide_set_custom_malloc");
  auto set_free = (free_fn(*)(free_fn))hl_objload_symbol(rt, "halide_set_custom_free");
  auto set_par_for = (par_for_fn(*)(par_for_fn))hl_objload_symbol(rt, "halide_set_custom_do_par_for");
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

/* A kernel's file: its objects one after another, so that it loads without a linker
 * (hl_objload.h): a header (magic, count), each object's size, then the objects, each starting on
 * 16 bytes (the loader reads their tables in place). The disk store appends its trailer after. */
const char kImageMagic[8] = {'H', 'L', 'O', 'B', 'J', 'S', '0', '1'};

bool read_file(const char *path, std::vector<unsigned char> &bytes) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && st.st_size >= 0;
  if (ok) {
    bytes.resize((size_t)st.st_size);
    size_t got = 0;
    while (ok && got < bytes.size()) {
      ssize_t r = read(fd, bytes.data() + got, bytes.size() - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) ok = false;
      else got += (size_t)r;
    }
  }
  close(fd);
  return ok;
}

size_t pad16(size_t n) { return (n + 15) & ~(size_t)15; }

bool write_image(const char *path, const std::vector<std::vector<unsigned char>> &objs) {
  std::vector<unsigned char> out(16 + 8 * objs.size());
  memcpy(out.data(), kImageMagic, 8);
  uint32_t count = (uint32_t)objs.size(), zero = 0;
  memcpy(out.data() + 8, &count, 4);
  memcpy(out.data() + 12, &zero, 4);
  for (size_t i = 0; i < objs.size(); i++) {
    uint64_t n = objs[i].size();
    memcpy(out.data() + 16 + 8 * i, &n, 8);
  }
  for (const std::vector<unsigned char> &o : objs) {
    out.resize(pad16(out.size()), 0);
    out.insert(out.end(), o.begin(), o.end());
  }
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(out.data(), 1, out.size(), f) == out.size();
  return fclose(f) == 0 && ok;
}

/* the objects of a kernel's file (bytes past the last are the store's trailer), calling into
 * scope (the runtime) */
hl_objimage *load_image(const unsigned char *b, size_t size, const hl_objimage *scope, std::string &why) {
  uint32_t count = 0;
  if (size < 16 || memcmp(b, kImageMagic, 8) != 0 || (memcpy(&count, b + 8, 4), count == 0) || count > (size - 16) / 8) {
    why = "not a kernel file of this build";
    return nullptr;
  }
  std::vector<const unsigned char *> objs(count);
  std::vector<size_t> sizes(count);
  size_t at = 16 + 8 * (size_t)count;
  for (uint32_t i = 0; i < count; i++) {
    uint64_t n;
    memcpy(&n, b + 16 + 8 * i, 8);
    at = pad16(at);
    if (at > size || n > size - at) {
      why = "a truncated kernel file";
      return nullptr;
    }
    objs[i] = b + at;
    sizes[i] = (size_t)n;
    at += (size_t)n;
  }
  char reason[512];
  hl_objimage *im = hl_objload(objs.data(), sizes.data(), count, scope, reason, sizeof reason);
  if (!im) why = reason;
  return im;
}

/* objects compiled, written as a kernel's file at path and loaded (calling into scope); NULL
 * with why */
hl_objimage *store_and_load(const std::vector<std::string> &obj_paths, const char *path, const hl_objimage *scope,
                            std::string &why) {
  std::vector<std::vector<unsigned char>> objs(obj_paths.size());
  for (size_t i = 0; i < obj_paths.size(); i++)
    if (!read_file(obj_paths[i].c_str(), objs[i])) {
      why = "reading a compiled object failed";
      return nullptr;
    }
  if (!write_image(path, objs)) {
    why = "writing a compiled pipeline to the cache directory failed";
    return nullptr;
  }
  std::vector<const unsigned char *> ptrs;
  std::vector<size_t> sizes;
  for (const std::vector<unsigned char> &o : objs) {
    ptrs.push_back(o.data());
    sizes.push_back(o.size());
  }
  char reason[512];
  hl_objimage *im = hl_objload(ptrs.data(), sizes.data(), ptrs.size(), scope, reason, sizeof reason);
  if (!im) why = std::string("loading a compiled pipeline failed: ") + reason;
  return im;
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

namespace {

/* What a pipeline's calls into Halide's runtime resolve against: for host pipelines the runtime
 * compiled ahead of time, for CUDA pipelines the JIT's runtime with its CUDA module, which made
 * the engine's device buffers (hl_device.cpp): a buffer's device interface and memory are that
 * runtime's, so a pipeline must call the same one. Set up once per process each. */
struct RuntimeScope {
  int state = 0;   /* 0: not tried, 1: ready, -1: failed or given up */
  std::string failure;
  hl_objimage *image = nullptr;   /* (for the process's life) */
};
RuntimeScope scopes[2];

RuntimeScope &scope_for(const Target &t) { return scopes[t.has_feature(Target::CUDA) ? 1 : 0]; }

/* Halide's runtime for host pipelines: loaded from the cache, else compiled into it (once per
 * machine, about half a second), with the engine's handlers; NULL and why */
hl_objimage *host_runtime(const Target &t, std::string &why) {
  /* (one runtime for every build of halua: entries of old builds share it) */
  std::string sig = "runtime|" + runtime_signature(t);
  const unsigned char *key = (const unsigned char *)sig.data();
  void *bytes;
  size_t nbytes;
  std::string load_why;
  hl_objimage *rt = hl_disk_read("runtime-", key, sig.size(), &bytes, &nbytes) == 0
                        ? load_image((const unsigned char *)bytes, nbytes, nullptr, load_why)
                        : nullptr;
  free(bytes);
  if (!rt) {
    auto fail = [&](const std::string &reason) {
      why = reason;
      return nullptr;
    };
    char obj[4200], file[4200];
    if (hl_disk_temp(obj, sizeof obj, ".o")) return fail("no room for a temporary file in the cache directory");
    if (hl_disk_temp(file, sizeof file, ".o")) {
      unlink(obj);
      return fail("no room for a temporary file in the cache directory");
    }
    try {
      compile_standalone_runtime(obj, t.without_feature(Target::JIT).without_feature(Target::NoRuntime));
    } catch (const std::exception &e) {
      unlink(obj);
      unlink(file);
      return fail(std::string("compiling Halide's runtime failed: ") + e.what());
    }
    rt = store_and_load({obj}, file, nullptr, load_why);
    unlink(obj);
    if (!rt) {
      unlink(file);
      return fail("loading Halide's runtime failed: " + load_why);
    }
    hl_disk_store("runtime-", key, sig.size(), file);
  }
  if (!install_handlers(rt, why)) {
    hl_objload_free(rt);
    return nullptr;
  }
  return rt;
}

/* The JIT's runtime for CUDA pipelines, as a scope of its exported functions (the main runtime's
 * first, then its CUDA module's, the order in which the JIT links a pipeline against them). Its
 * handlers are the ones every run's context carries (hl_kernel_run), as for JIT-compiled
 * pipelines. NULL and why. */
hl_objimage *cuda_runtime(const Target &t, std::string &why) {
  std::vector<Internal::JITModule> runtimes;
  try {
    runtimes = Internal::JITSharedRuntime::get(nullptr, t.with_feature(Target::JIT), true);
  } catch (const std::exception &e) {
    why = std::string("building Halide's CUDA runtime failed: ") + e.what();
    return nullptr;
  }
  std::vector<const char *> names;
  std::vector<void *> addrs;
  for (const Internal::JITModule &m : runtimes)
    for (const auto &e : m.exports()) {
      names.push_back(e.first.c_str());
      addrs.push_back(e.second.address);
    }
  hl_objimage *im = names.empty() ? nullptr : hl_objload_functions(names.data(), addrs.data(), names.size());
  if (!im) why = names.empty() ? "Halide's CUDA runtime exports nothing" : "out of memory";
  return im;
}

/* said once when t's pipelines stop going to the disk (the process JIT-compiles them instead) */
void warn_memory_only(const Target &t, const std::string &why) {
  fprintf(stderr, "halua: warning: %s; %s are JIT-compiled and cached in memory only\n", why.c_str(),
          t.has_feature(Target::CUDA) ? "CUDA pipelines" : "pipelines");
}

}  // namespace

void hl_aot_disable(const Target &t, const char *why) {
  RuntimeScope &s = scope_for(t);
  s.state = -1;
  s.failure = why;
}

bool hl_aot_ready(const Target &t, std::string &why) {
  RuntimeScope &s = scope_for(t);
  if (s.state) {
    why = s.failure;
    return s.state > 0;
  }
  s.state = -1;
  s.failure = "no usable cache directory";
  if (!hl_disk_dir()) {   /* (hl_disk_dir said why, when there was a reason to) */
    why = s.failure;
    return false;
  }
  /* set up once per process; a failure is said once, and kernels are JIT-compiled */
  auto fail = [&](const std::string &reason) {
    why = s.failure = reason;
    warn_memory_only(t, reason);
    return false;
  };
  /* pipelines call the engine's extern stages (matmul, sort, LAPACK, transposes) by name: the
   * library that holds them (loaded privately by Lua's require) joins the global scope */
  Dl_info self;
  if (!dladdr((const void *)&hl_aot_ready, &self) || !self.dli_fname ||
      !dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL))
    return fail("the engine library cannot be found for its extern stages");
  std::string reason;
  hl_objimage *rt = t.has_feature(Target::CUDA) ? cuda_runtime(t, reason) : host_runtime(t, reason);
  if (!rt) return fail(reason);
  s.image = rt;
  s.state = 1;
  s.failure.clear();
  return true;
}

hl_aot_entry hl_aot_load(const void *file, size_t size, const std::string &symbol, const Target &t, void **handle) {
  *handle = nullptr;
  std::string why;
  hl_objimage *im = load_image((const unsigned char *)file, size, scope_for(t).image, why);
  if (!im) {
    hl_error("loading a cached pipeline failed: %s", why.c_str());
    return nullptr;
  }
  auto entry = (hl_aot_entry)hl_objload_symbol(im, (symbol + "_argv").c_str());
  if (!entry) {
    hl_objload_free(im);
    hl_error("a cached pipeline has no entry point %s_argv", symbol.c_str());
    return nullptr;
  }
  *handle = im;   /* loaded until its kernel is freed (evicted from the cache and unused) */
  return entry;
}

void hl_aot_describe(void *handle, const std::string &name) {
  static const int wanted = [] {
    const char *v = getenv("HALUA_PERF_MAP");
    if (!v || !*v || strcmp(v, "0") == 0) return 0;
    if (strcmp(v, "1") == 0) return 1;
    fprintf(stderr, "halua: warning: HALUA_PERF_MAP=%s is not 0 or 1; no perf map is written\n", v);
    return 0;
  }();
  static bool warned = false;
  if (!wanted || !handle) return;
  if (hl_objload_perf_map((hl_objimage *)handle, name.c_str()) != 0 && !warned) {
    warned = true;   /* (under the compiler lock, as every caller) */
    fprintf(stderr, "halua: warning: HALUA_PERF_MAP: /tmp/perf-%ld.map cannot be written\n", (long)getpid());
  }
}

hl_aot_entry hl_aot_symbol(void *handle, const std::string &symbol) {
  return handle ? (hl_aot_entry)hl_objload_symbol((hl_objimage *)handle, (symbol + "_argv").c_str()) : nullptr;
}

size_t hl_aot_bytes(void *handle) { return hl_objload_bytes((const hl_objimage *)handle); }

void hl_aot_unload(void *handle) { hl_objload_free((hl_objimage *)handle); }

hl_aot_entry hl_aot_compile(const Module &m, const std::string &symbol, const char *kernel_file, double *llvm_ms, double *link_ms,
                            void **handle) {
  *handle = nullptr;
  std::string obj = std::string(kernel_file) + ".o";
  auto t0 = std::chrono::steady_clock::now();
  try {
    m.compile({{OutputFileType::object, obj}});
  } catch (...) {
    unlink(obj.c_str());
    throw;
  }
  *llvm_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  hl_aot_entry entry = hl_aot_load_objects({obj}, symbol, kernel_file, m.target(), link_ms, handle);
  unlink(obj.c_str());
  return entry;
}

hl_aot_entry hl_aot_load_objects(const std::vector<std::string> &objs, const std::string &symbol, const char *kernel_file,
                                 const Target &t, double *link_ms, void **handle, bool disable_on_failure) {
  *handle = nullptr;
  auto t1 = std::chrono::steady_clock::now();
  std::string why;
  hl_objimage *im = store_and_load(objs, kernel_file, scope_for(t).image, why);
  hl_aot_entry entry = im ? (hl_aot_entry)hl_objload_symbol(im, (symbol + "_argv").c_str()) : nullptr;
  if (im && !entry) {
    hl_objload_free(im);
    im = nullptr;
    why = "a compiled pipeline has no entry point " + symbol + "_argv";
  }
  *handle = im;
  *link_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  if (!entry && disable_on_failure) {
    /* the disk path does not work here (a directory that cannot be written, code the loader
     * refuses): once said, the process JIT-compiles from now on instead of compiling everything
     * twice */
    warn_memory_only(t, why);
    hl_aot_disable(t, why.c_str());
  }
  return entry;
}
