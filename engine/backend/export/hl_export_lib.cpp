/* hl.export's library: the pipeline compiled ahead of time with Halide's runtime in it, a small
 * generated C entry point, the embedded captures, and libhalua_export.a's host stages and call
 * adapter, linked into one relocatable object whose only global symbol is the entry point; then
 * archived (libNAME.a) and linked as a shared object (libNAME.so). The tools are the system's C
 * compiler and binutils (cc, ld, objcopy, ar), run in a private directory beside the output. */
#include "hl_export_lib.h"
#include "hl_device.h"
#include "hl_export_loop.h"
#include "hl_lower.h"
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
extern "C" {
#include "hl_error.h"
#include "hl_hooks.h"
}

extern char **environ;

using namespace Halide;

namespace {

struct Failure {
  std::string what;
};

/* the directory and its missing parents, mode 0777 less the umask */
void create_directories(const std::string &dir) {
  std::string part;
  std::stringstream ss(dir);
  std::string piece;
  if (!dir.empty() && dir[0] == '/') part = "/";
  while (std::getline(ss, piece, '/')) {
    if (piece.empty()) continue;
    part += piece + "/";
    if (mkdir(part.c_str(), 0777) && errno != EEXIST) throw Failure{"cannot create the directory " + part + ": " + strerror(errno)};
  }
  struct stat st;
  if (stat(dir.c_str(), &st) || !S_ISDIR(st.st_mode)) throw Failure{dir + " is not a directory"};
}

/* A scratch directory beside the output (so the files move into place by rename), removed with
 * its files when the export ends. */
struct Scratch {
  std::string path;
  explicit Scratch(const std::string &dir, const std::string &name) {
    std::string tmpl = dir + "/.export-" + name + "-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back(0);
    if (!mkdtemp(buf.data())) throw Failure{"cannot create a working directory in " + dir + ": " + strerror(errno)};
    char *abs = realpath(buf.data(), nullptr);   /* (tools run inside it: paths must not be relative) */
    path = abs ? abs : buf.data();
    free(abs);
  }
  ~Scratch() {
    if (DIR *d = opendir(path.c_str())) {
      while (struct dirent *e = readdir(d))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink((path + "/" + e->d_name).c_str());
      closedir(d);
    }
    rmdir(path.c_str());
  }
  std::string operator/(const std::string &f) const { return path + "/" + f; }
};

/* Runs a tool in the scratch directory; its output goes to a log there, whose start a failure
 * quotes. */
void run_tool(const Scratch &s, const std::vector<std::string> &args, const char *doing) {
  std::vector<const char *> argv;
  for (const std::string &a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  std::string log = s / "tool.log";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addchdir_np(&fa, s.path.c_str());
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, const_cast<char *const *>(argv.data()), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc)
    throw Failure{std::string("cannot run ") + args[0] + " (" + strerror(rc) +
                  "): export needs a C compiler and binutils (cc, ld, objcopy, ar; Debian's build-essential)"};
  int status = 0;
  bool known = true;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno == EINTR) continue;
    known = false;   /* a host that ignores SIGCHLD reaps its children: the files say how it went */
    break;
  }
  if (known && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
    std::ifstream f(log);
    std::string out((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (out.size() > 600) out = out.substr(0, 600) + "...";
    while (!out.empty() && isspace((unsigned char)out.back())) out.pop_back();
    throw Failure{std::string(doing) + " failed (" + args[0] + ")" + (out.empty() ? "" : ": " + out)};
  }
}

void write_file(const std::string &path, const std::string &text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f.good()) throw Failure{"cannot write " + path};
}

/* libhalua_export.a: beside the engine's library (the build tree; libhalua installed), relative
 * to the installed halua_core module, else at the configured install path */
std::string support_library() {
  Dl_info self;
  std::vector<std::string> tried;
  if (dladdr((const void *)&hl_export_library, &self) && self.dli_fname) {
    std::string lib = self.dli_fname;
    size_t slash = lib.rfind('/');
    std::string dir = slash == std::string::npos ? std::string(".") : lib.substr(0, slash);
    tried.push_back(dir + "/libhalua_export.a");
#ifdef HALUA_CMOD_TO_LIB
    tried.push_back(dir + "/" HALUA_CMOD_TO_LIB "/libhalua_export.a");
#endif
  }
#ifdef HALUA_EXPORT_LIB_INSTALLED
  tried.push_back(HALUA_EXPORT_LIB_INSTALLED);
#endif
  for (const std::string &p : tried)
    if (access(p.c_str(), R_OK) == 0) return p;
  std::string where;
  for (const std::string &p : tried) where += (where.empty() ? "" : ", ") + p;
  throw Failure{"libhalua_export.a (the host stages every exported library links in) is missing; looked at " + where};
}

std::string upper(const std::string &s) {
  std::string u = s;
  for (char &c : u) c = (char)toupper((unsigned char)c);
  return u;
}

std::string shape_text(const hl_type &t) {
  std::string s = "[";
  for (int a = 0; a < t.ndim; a++) s += (a ? ", " : "") + std::to_string((long long)t.shape[a]);
  return s + "]";
}

/* one array's descriptor (hl_export_loop.h, hl_export_call): type code, bits, rank, shape */
std::string describe(const hl_type &t, const std::string &what) {
  int64_t n = 1;
  for (int a = 0; a < t.ndim; a++) n *= t.shape[a];
  if (n > INT32_MAX) throw Failure{what + " has " + std::to_string((long long)n) + " elements; an exported library takes at most 2^31-1 per array"};
  Type ht = hl_halide_type(t.dtype);
  std::string d = std::to_string((int)ht.code()) + ", " + std::to_string(ht.bits()) + ", " + std::to_string(t.ndim) + ",";
  for (int a = 0; a < t.ndim; a++) d += " " + std::to_string((long long)t.shape[a]) + ",";
  return d;
}

std::vector<hl_type> param_types(const hl_graph *g) {
  std::vector<hl_type> types;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].prim == HL_P_PARAM) types.push_back(g->nodes[i].type);
  return types;
}

/* The constant data of a library: arrays appended 64-byte aligned, referred to by offset. */
struct Constants {
  std::string bytes;
  size_t add(const hl_array &a) {
    bytes.append((64 - bytes.size() % 64) % 64, '\0');
    size_t at = bytes.size();
    size_t n = (size_t)hl_shape_size(a.ndim, a.shape) * hl_dtype_size(a.dtype);
    if (hl_array_device(&a) != HL_DEVICE_CPU) {
      /* a compiled loop's constant, captured where the loop ran (HALUA_DEVICE=cuda, say) */
      if (!hl_array_is_contiguous(&a)) throw Failure{"internal: a constant of the function is a strided view in device memory"};
      bytes.resize(at + n);
      if (n && hl_device_copy_to_host(hl_array_device(&a), &bytes[at], hl_array_device_address(&a), n))
        throw Failure{std::string("copying a constant from device memory failed: ") + hl_error_message()};
      return at;
    }
    if (hl_array_is_contiguous(&a)) {
      bytes.append((const char *)hl_array_data(&a), n);
    } else {
      hl_array c;
      if (hl_array_alloc(&c, a.dtype, a.ndim, a.shape)) throw Failure{"out of memory"};
      hl_array_copy_elements(&c, &a);
      bytes.append((const char *)hl_array_data(&c), n);
      hl_array_release(&c);
    }
    return at;
  }
};

/* The compiled loops a graph runs, its loops' bodies' loops included, each once. */
void collect_loops(const hl_graph *g, std::vector<hl_loop_info> &loops, std::vector<int> &ids, bool &lapack) {
  for (int i = 0; i < g->nnodes; i++) {
    const hl_node &n = g->nodes[i];
    if (hl_prims[n.prim].kind == HL_K_LINALG) lapack = true;
    if (hl_prims[n.prim].kind == HL_K_DIST)   /* (an exported library runs in one process, without MPI) */
      throw Failure{std::string(hl_prims[n.prim].name) + " is a collective of hl.dist, which exported libraries do not run"};
    int id = hl_graph_distinct_loop(g, i);
    bool seen = false;   /* (nor in another body: ids holds every loop collected so far) */
    for (int known : ids) seen = seen || known == id;
    if (id < 0 || seen) continue;
    const hl_runtime_hooks *hooks = hl_backend_hooks();
    hl_loop_info l;
    if (!hooks || hooks->loop_info(id, &l)) throw Failure{"internal: an unknown compiled loop"};
    if (l.device != HL_DEVICE_CPU) throw Failure{"a loop of the function was traced for cuda"};
    ids.push_back(id);
    loops.push_back(l);
    collect_loops(l.body, loops, ids, lapack);
    if (l.kind == HL_LOOP_WHILE) collect_loops(l.cond, loops, ids, lapack);
  }
}

/* One compiled loop's table entry and the arrays it points to (hl_export_loop.h). */
std::string loop_entry(const hl_loop_info *l, int id, const std::string &name, Constants &constants, std::string &decls) {
  std::string p = "loop" + std::to_string(id) + "_", fn = name + "_" + p;
  std::string inputs, results;
  for (int j = 0; j < l->ninputs; j++) inputs += describe(l->input_types[j], "a loop's input");
  for (int j = 0; j < l->nresults; j++) results += describe(l->result_types[j], "a loop's result");
  decls += "int " + fn + "body_argv(void **);\n";
  if (l->kind == HL_LOOP_WHILE) decls += "int " + fn + "cond_argv(void **);\n";
  decls += "static const int " + p + "inputs[] = {" + inputs + " 0};\n";
  decls += "static const int " + p + "results[] = {" + results + " 0};\n";
  auto captures = [&](const hl_graph *prog, int ncaptures, const hl_array *caps, const int *src, const char *which) {
    std::vector<hl_type> types = param_types(prog);
    int first = (int)types.size() - ncaptures;
    std::string srcs, descs, data;
    for (int c = 0; c < ncaptures; c++) {
      srcs += std::to_string(src[c]) + ", ";
      descs += describe(types[first + c], "a loop's constant");
      data += src[c] >= 0 ? std::string("0, ") : name + "_constants + " + std::to_string(constants.add(caps[c])) + ", ";
    }
    decls += "static const int " + p + which + "_src[] = {" + srcs + "0};\n";
    decls += "static const int " + p + which + "_caps[] = {" + descs + " 0};\n";
    decls += "static const unsigned char *const " + p + which + "_data[] = {" + data + "0};\n";
    return std::to_string(ncaptures) + ", " + p + which + "_src, " + p + which + "_caps, " + p + which + "_data";
  };
  std::string body = captures(l->body, l->body_ncaptures, l->body_captures, l->body_src, "body");
  std::string cond = l->kind == HL_LOOP_WHILE ? captures(l->cond, l->cond_ncaptures, l->cond_captures, l->cond_src, "cond") : "0, 0, 0, 0";
  int kind = l->kind == HL_LOOP_FORI ? HL_EXPORT_FORI : l->kind == HL_LOOP_WHILE ? HL_EXPORT_WHILE : HL_EXPORT_SCAN;
  return "  {" + std::to_string(id) + ", " + std::to_string(kind) + ", " + std::to_string((long long)l->lo) + ", " +
         std::to_string((long long)l->hi) + ", " + std::to_string(l->ncarry) + ", " + std::to_string(l->nxs) + ", " +
         std::to_string(l->nys) + ", " + std::to_string(l->ninputs) + ", " + std::to_string(l->nresults) + ", " + fn +
         "body_argv, " + (l->kind == HL_LOOP_WHILE ? fn + "cond_argv" : std::string("0")) + ", " + p + "inputs, " + p +
         "results, " + body + ", " + cond + "},\n";
}

/* The entry point: data pointers for every array (inputs, embedded captures, outputs) and their
 * descriptors, handed to hl_export_call (through the loop driver's run when there are
 * loops, whose table comes first). */
std::string entry_source(const hl_graph *g, int nargs, const std::vector<size_t> &offsets, const std::string &name,
                         const std::string &loop_decls, const std::string &loop_table, int nloops) {
  std::vector<hl_type> params = param_types(g);
  std::string desc;
  for (size_t j = 0; j < params.size(); j++) {
    std::string what = (int)j < nargs ? "input " + std::to_string(j) : "embedded constant " + std::to_string(j - nargs);
    desc += "  " + describe(params[j], what) + "   /* " + what + " */\n";
  }
  for (int k = 0; k < g->noutputs; k++)
    desc += "  " + describe(g->nodes[g->outputs[k]].type, "output " + std::to_string(k)) + "   /* output " + std::to_string(k) + " */\n";
  int n = (int)params.size() + g->noutputs;
  std::string call = nloops ? "hl_export_call_loops" : "hl_export_call";
  std::string s = "/* The entry point of the library hl.export wrote for " + name + " */\n#include <stdint.h>\n\n";
  s += "int " + name + "_pipeline_argv(void **args);\n";
  s += "int " + call + "(int (*pipeline)(void **), int n, const int32_t *desc, void *const *data);\n";
  s += "extern const unsigned char " + name + "_constants[];\n";
  if (nloops) {
    s += "\ntypedef struct hl_export_loop { " HL_EXPORT_LOOP_FIELDS_TEXT " } hl_export_loop;\n";
    s += loop_decls + "const hl_export_loop hl_export_loops[] = {\n" + loop_table + "};\n";
    s += "const int hl_export_nloops = " + std::to_string(nloops) + ";\n";
  }
  s += "\nstatic const int32_t desc[] = {\n" + desc + "  0};\n\n";
  s += "int " + name + "(const void *const *inputs, void *const *outputs) {\n";
  s += "  void *data[" + std::to_string(n) + "];\n";
  for (int j = 0; j < nargs; j++) s += "  data[" + std::to_string(j) + "] = (void *)inputs[" + std::to_string(j) + "];\n";
  for (size_t c = 0; c < offsets.size(); c++)
    s += "  data[" + std::to_string(nargs + c) + "] = (void *)(" + name + "_constants + " + std::to_string(offsets[c]) + ");\n";
  for (int k = 0; k < g->noutputs; k++)
    s += "  data[" + std::to_string(params.size() + k) + "] = outputs[" + std::to_string(k) + "];\n";
  s += "  return " + call + "(" + name + "_pipeline_argv, " + std::to_string(n) + ", desc, data);\n}\n";
  return s;
}

std::string header_source(const hl_graph *g, int nargs, const std::string &name, bool lapack) {
  std::vector<hl_type> params = param_types(g);
  std::string U = upper(name), libs = std::string("-lm -lpthread -ldl") + (lapack ? " -llapack" : "");
  std::string s = "/* " + name + ": a function exported by halua (hl.export) as a standalone library.\n *\n";
  s += " *   int " + name + "(const void *const *inputs, void *const *outputs);\n *\n";
  s += " * Each pointer is one array's contiguous row-major data (bool: one byte per element, 0 or 1;\n";
  s += " * float16 and bfloat16: their 16-bit patterns). The outputs are written, never allocated.\n";
  s += " * Returns 0 on success, else a nonzero Halide status (its message goes to stderr). Calls may\n";
  s += " * run concurrently.\n *\n * Inputs:\n";
  for (int j = 0; j < nargs; j++)
    s += " *   " + std::to_string(j) + ": " + hl_dtype_name(params[j].dtype) + " " + shape_text(params[j]) + "\n";
  s += " * Outputs:\n";
  for (int k = 0; k < g->noutputs; k++) {
    const hl_type &t = g->nodes[g->outputs[k]].type;
    s += " *   " + std::to_string(k) + ": " + hl_dtype_name(t.dtype) + " " + shape_text(t) + "\n";
  }
  s += " *\n * Link: cc main.c lib" + name + ".a " + libs + "\n *   or: cc main.c -L. -l" + name + " (lib" + name + ".so)\n */\n";
  s += "#ifndef " + U + "_H\n#define " + U + "_H\n\n";
  s += "#define " + U + "_NUM_INPUTS " + std::to_string(nargs) + "\n";
  s += "#define " + U + "_NUM_OUTPUTS " + std::to_string(g->noutputs) + "\n\n";
  s += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  s += "int " + name + "(const void *const *inputs, void *const *outputs);\n\n";
  s += "#ifdef __cplusplus\n}\n#endif\n#endif\n";
  return s;
}

/* Halide's target for the library: this machine's CPU, with the runtime compiled in and the
 * pipeline's checks kept (an extern stage's failure must fail the call) */
Target export_target() {
  return hl_device_target(HL_DEVICE_CPU)
      .without_feature(Target::JIT)
      .without_feature(Target::UserContext)
      .without_feature(Target::NoAsserts)
      .without_feature(Target::NoRuntime);
}

/* one function of the library: a graph's pipeline, compiled to an object */
void compile_function(const hl_graph *g, const std::string &fn, const Target &t, const std::string &obj) {
  hl_lowered L;
  L.exporting = true;
  hl_lower_graph(g, L);
  hl_schedule_cpu(L, t);
  std::vector<Argument> args;
  Pipeline p = hl_pipeline(L, args);   /* (IEEE arithmetic, as under jit) */
  p.compile_to_module(args, fn, t).compile({{OutputFileType::object, obj}});
}

void export_library(const hl_graph *g, int ncaptures, const hl_array *captures, const std::string &dir,
                    const std::string &name) {
  if (g->device != HL_DEVICE_CPU) throw Failure{"the function was traced for cuda; exported libraries run on the CPU (trace it with CPU arrays)"};
  bool lapack = false;
  std::vector<hl_loop_info> loops;
  std::vector<int> loop_ids;
  collect_loops(g, loops, loop_ids, lapack);
  int nargs = (int)param_types(g).size() - ncaptures;
  if (nargs < 0) throw Failure{"internal: more captures than parameters"};
  std::string support = support_library();
  create_directories(dir);
  Scratch s(dir, name);

  /* the pipeline, with Halide's runtime; the loops' bodies and conditions without another copy */
  Target t = export_target();
  std::vector<std::string> objects = {"pipeline.o", "entry.o", "constants.o"};
  compile_function(g, name + "_pipeline", t, s / "pipeline.o");
  for (size_t j = 0; j < loops.size(); j++) {
    std::string fn = name + "_loop" + std::to_string(loop_ids[j]) + "_";
    compile_function(loops[j].body, fn + "body", t.with_feature(Target::NoRuntime), s / (fn + "body.o"));
    objects.push_back(fn + "body.o");
    if (loops[j].kind == HL_LOOP_WHILE) {
      compile_function(loops[j].cond, fn + "cond", t.with_feature(Target::NoRuntime), s / (fn + "cond.o"));
      objects.push_back(fn + "cond.o");
    }
  }

  /* the captures and the loops' own constants, as one block of constant data */
  Constants constants;
  std::vector<size_t> offsets;
  for (int c = 0; c < ncaptures; c++) offsets.push_back(constants.add(captures[c]));
  std::string loop_decls, loop_table;
  for (size_t j = 0; j < loops.size(); j++) loop_table += loop_entry(&loops[j], loop_ids[j], name, constants, loop_decls);
  write_file(s / "constants.bin", constants.bytes);
  write_file(s / "constants.s", "  .section .rodata\n  .balign 64\n  .globl " + name + "_constants\n" + name +
                                    "_constants:\n  .incbin \"constants.bin\"\n  .byte 0\n  .section .note.GNU-stack,\"\",@progbits\n");
  run_tool(s, {"cc", "-c", "constants.s", "-o", "constants.o"}, "assembling the embedded constants");
  write_file(s / "entry.c", entry_source(g, nargs, offsets, name, loop_decls, loop_table, (int)loops.size()));
  write_file(s / (name + ".h"), header_source(g, nargs, name, lapack));
  run_tool(s, {"cc", "-O2", "-fPIC", "-c", "entry.c", "-o", "entry.o"}, "compiling the entry point");

  /* one object: the functions, the entry point, the constants, and the stages they call (ld takes
   * from the archive only the members that something needs); only the entry point stays global */
  std::vector<std::string> ld = {"ld", "-r", "-o", name + ".o"};
  ld.insert(ld.end(), objects.begin(), objects.end());
  ld.push_back(support);
  run_tool(s, ld, "linking the library's object");
  run_tool(s, {"objcopy", "--keep-global-symbol=" + name, name + ".o"}, "hiding the library's internal symbols");
  run_tool(s, {"ar", "rcs", "lib" + name + ".a", name + ".o"}, "archiving the static library");
  std::vector<std::string> so = {"cc", "-shared", "-o", "lib" + name + ".so", name + ".o", "-Wl,--no-undefined", "-lm", "-lpthread", "-ldl"};
  if (lapack) so.push_back("-llapack");
  run_tool(s, so, "linking the shared library");

  /* into place, each by rename (a reader sees an old file or a new one, never half of one) */
  for (const std::string &f : {name + ".h", "lib" + name + ".a", "lib" + name + ".so"})
    if (rename((s / f).c_str(), (dir + "/" + f).c_str()))
      throw Failure{"cannot move " + f + " into " + dir + ": " + strerror(errno)};
}

}  // namespace

int hl_export_library(const hl_graph *g, int ncaptures, const hl_array *captures, const char *dir, const char *name) {
  try {
    export_library(g, ncaptures, captures, dir, name);
    return 0;
  } catch (const Failure &f) {
    return hl_error("export: %s", f.what.c_str());
  } catch (const std::exception &e) {
    return hl_error("export: compiling the pipeline failed: %s", e.what());
  }
}
