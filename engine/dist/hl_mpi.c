/* halua_dist: the Lua C module that carries hl.dist's collectives over Open MPI. It is a module
 * of its own, linked to libmpi, so that the engine (halua_core) links no MPI library and loads
 * none until a script uses hl.dist. It fills an hl_dist_transport (engine/host/hl_dist.h) whose
 * address lua/halua/dist.lua hands to the engine.
 *
 * A process that mpirun did not start gets a transport of one rank that needs no MPI at all
 * (MPI_Init in a singleton would start a runtime daemon for nothing). */
#define _GNU_SOURCE   /* dladdr, RTLD_NODELETE, on_exit */
#include "hl_dist.h"
#include <dlfcn.h>
#include <lauxlib.h>
#include <lua.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int started;     /* 0 not yet, 1 alone (no mpirun), 2 MPI */
static hl_dist_transport transport;
static char error_buf[MPI_MAX_ERROR_STRING + 64];

/* ---- the transport over MPI_COMM_WORLD (its error handler returns codes: see start_mpi) ---- */

static const char *mpi_error_text(int code) {
  if (code == -2) return "a collective of more than 2 GiB per rank is not supported";
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "error %d", code);
  snprintf(error_buf, sizeof error_buf, "MPI failed: %s", s);
  return error_buf;
}

/* the bytes of the dtypes a transport sees (no float16/bfloat16: the engine widens them) */
static size_t elem_size(hl_dtype t) {
  return t == HL_FLOAT64 || t == HL_INT64 ? 8 : t == HL_FLOAT32 || t == HL_INT32 ? 4 : 1;
}

static MPI_Datatype mpi_type(hl_dtype t) {
  switch (t) {
  case HL_FLOAT32: return MPI_FLOAT;
  case HL_FLOAT64: return MPI_DOUBLE;
  case HL_INT32: return MPI_INT32_T;
  case HL_INT64: return MPI_INT64_T;
  case HL_INT8: return MPI_INT8_T;
  default: return MPI_UINT8_T;   /* bool, uint8 */
  }
}

static MPI_Op mpi_op(hl_dist_reduction op) { return op == HL_DIST_MAX ? MPI_MAX : op == HL_DIST_MIN ? MPI_MIN : MPI_SUM; }

/* MPI counts are ints: reductions go in pieces, byte moves past 2 GiB are refused (-2) */
#define PIECE ((int64_t)1 << 28)

static int mpi_allreduce(const void *send, void *recv, int64_t count, hl_dtype dtype, hl_dist_reduction op) {
  size_t es = elem_size(dtype);
  for (int64_t done = 0; done < count || (count == 0 && done == 0); done += PIECE) {
    int n = (int)(count - done < PIECE ? count - done : PIECE);
    int rc = MPI_Allreduce((const char *)send + (size_t)done * es, (char *)recv + (size_t)done * es, n, mpi_type(dtype),
                           mpi_op(op), MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return rc;
    if (count == 0) break;
  }
  return 0;
}

static int mpi_allgather(const void *send, void *recv, int64_t bytes) {
  if (bytes > INT_MAX) return -2;
  return MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
}

static int mpi_reduce_scatter(const void *send, void *recv, int64_t count, hl_dtype dtype, hl_dist_reduction op) {
  if (count > INT_MAX / 8) return -2;
  return MPI_Reduce_scatter_block(send, recv, (int)count, mpi_type(dtype), mpi_op(op), MPI_COMM_WORLD);
}

static int mpi_alltoall(const void *send, void *recv, int64_t bytes) {
  if (bytes > INT_MAX) return -2;
  return MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
}

static int mpi_bcast(void *buf, int64_t bytes, int root) {
  if (bytes > INT_MAX) return -2;
  return MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
}

static int mpi_sendrecv(const void *send, int dest, void *recv, int src, int64_t bytes) {
  if (bytes > INT_MAX) return -2;
  return MPI_Sendrecv(send, (int)bytes, MPI_BYTE, dest < 0 ? MPI_PROC_NULL : dest, 7, recv, (int)bytes, MPI_BYTE,
                      src < 0 ? MPI_PROC_NULL : src, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* ---- one rank, no MPI: every collective is a copy ---- */

static int one_reduce(const void *send, void *recv, int64_t count, hl_dtype dtype, hl_dist_reduction op) {
  (void)op;
  memmove(recv, send, (size_t)count * elem_size(dtype));
  return 0;
}
static int one_move(const void *send, void *recv, int64_t bytes) {
  memmove(recv, send, (size_t)bytes);
  return 0;
}
static int one_bcast(void *buf, int64_t bytes, int root) {
  (void)buf, (void)bytes, (void)root;
  return 0;
}
static int one_sendrecv(const void *send, int dest, void *recv, int src, int64_t bytes) {
  if (dest == 0 && src == 0) memmove(recv, send, (size_t)bytes);
  return 0;
}
static const char *one_error_text(int code) {
  (void)code;
  return "internal: a one-rank collective failed";
}

/* ---- starting and ending ---- */

static int launched_by_mpirun(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK") || getenv("PMI_SIZE");
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* How long a rank that has finished waits for the others before it takes the job down (a rank
 * still in a collective this one never made would keep MPI_Finalize waiting for ever). */
static double exit_wait_seconds(void) {
  const char *s = getenv("HALUA_DIST_EXIT_WAIT");
  double v = s ? atof(s) : 0;
  return v > 0 ? v : 120;
}

/* The job's end for this rank, when the process exits (on_exit: its status). A rank that exits
 * with a failure (luajit after an uncaught error, os.exit(1)) leaves without MPI_Finalize:
 * mpirun then ends the whole job at once, where the other ranks would otherwise wait in their
 * next collective. A rank that exits cleanly meets the others at a barrier and finalizes. */
static void finish_on_exit(int status, void *unused) {
  (void)unused;
  if (started != 2) return;
  int fin = 0;
  MPI_Finalized(&fin);
  if (fin) return;
  fflush(stdout);
  fflush(stderr);
  if (status != 0) return;
  MPI_Request req;
  int done = 0;
  double limit = exit_wait_seconds(), t0 = seconds();
  if (MPI_Ibarrier(MPI_COMM_WORLD, &req) == MPI_SUCCESS) {
    while (!done && seconds() - t0 < limit) {
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (!done) {
        struct timespec nap = {0, 2000000};
        nanosleep(&nap, NULL);
      }
    }
  }
  if (!done) {
    fprintf(stderr, "halua: rank %d has finished, but other ranks have not reached the end after %.0f s (a rank may be "
                    "waiting in a collective this one never made); ending the job\n",
            transport.rank + 1, limit);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  started = 0;
}

static int start_mpi(lua_State *L) {
  /* Open MPI loads its components with dlopen; they resolve MPI's symbols globally, which a Lua
   * module (loaded RTLD_LOCAL) does not provide: make libmpi's symbols global first */
  Dl_info info;
  if (dladdr((void *)&MPI_Init_thread, &info) && info.dli_fname) dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  int provided = 0, rank = 0, size = 1;
  if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    return luaL_error(L, "halua: dist.init: MPI_Init failed");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* the exit handler lives in this module: keep it loaded after the Lua state closes */
  if (dladdr((void *)&finish_on_exit, &info) && info.dli_fname) dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  on_exit(finish_on_exit, NULL);
  transport = (hl_dist_transport){rank, size, mpi_allreduce, mpi_allgather, mpi_reduce_scatter, mpi_alltoall,
                                  mpi_bcast, mpi_sendrecv, mpi_error_text};
  started = 2;
  return 0;
}

/* init() -> rank (0-based), size: starts MPI when mpirun started this process, else one rank */
static int l_init(lua_State *L) {
  if (!started) {
    if (launched_by_mpirun()) {
      start_mpi(L);
    } else {
      transport = (hl_dist_transport){0, 1, one_reduce, one_move, one_reduce, one_move, one_bcast, one_sendrecv,
                                      one_error_text};
      started = 1;
    }
  }
  lua_pushinteger(L, transport.rank);
  lua_pushinteger(L, transport.size);
  lua_pushboolean(L, started == 2);
  return 3;
}

static int l_transport(lua_State *L) {
  lua_pushlightuserdata(L, started ? &transport : NULL);
  return 1;
}

static int l_barrier(lua_State *L) {
  if (started == 2 && MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) return luaL_error(L, "halua: dist.barrier: MPI_Barrier failed");
  return 0;
}

/* abort(message, code): the message on stderr, then the whole job ends (MPI_Abort) */
static int l_started(lua_State *L) {
  lua_pushboolean(L, started != 0);
  lua_pushinteger(L, transport.rank);
  lua_pushinteger(L, transport.size);
  return 3;
}

static int l_abort(lua_State *L) {
  const char *msg = luaL_optstring(L, 1, NULL);
  int code = (int)luaL_optinteger(L, 2, 1);
  if (msg) fprintf(stderr, "%s\n", msg);
  fflush(stderr);
  fflush(stdout);
  if (started == 2) MPI_Abort(MPI_COMM_WORLD, code);
  exit(code);
  return 0;
}

static int l_wtime(lua_State *L) {
  lua_pushnumber(L, started == 2 ? MPI_Wtime() : seconds());
  return 1;
}

static int l_library(lua_State *L) {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  lua_pushlstring(L, v, (size_t)len);
  return 1;
}

int luaopen_halua_dist(lua_State *L) {
  static const luaL_Reg fns[] = {{"init", l_init},   {"transport", l_transport}, {"barrier", l_barrier},
                                 {"abort", l_abort}, {"wtime", l_wtime}, {"started", l_started},         {"library", l_library},
                                 {NULL, NULL}};
  lua_newtable(L);
  luaL_register(L, NULL, fns);
  return 1;
}
