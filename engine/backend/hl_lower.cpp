/* Lowering: one Halide Func per IR node, one case per primitive. Schedules live in
 * hl_schedule.cpp; this file says only what is computed. Bools are stored as uint8 0/1. */
#include <cmath>
#include <map>
#include <set>
#include "hl_lower.h"
#include "hl_codegen_mends.h"
#include "hl_vmath.h"
#include "hl_extern_cublas.h"
#include "hl_extern_cufft.h"
#include "hl_device.h"
#include "hl_linalg_layout.h"
#include "hl_symbolic.h"

using namespace Halide;
using Halide::Internal::make_zero;
using Halide::Internal::make_one;
using Halide::Internal::const_true;
using Halide::Internal::const_false;

Type hl_halide_type(hl_dtype t) {
  switch (t) {
  case HL_BOOL: return UInt(8);
  case HL_UINT8: return UInt(8);
  case HL_INT8: return Int(8);
  case HL_FLOAT16: case HL_BFLOAT16: return UInt(16);   /* the bit pattern: see hl_half_decode */
  case HL_INT32: return Int(32);
  case HL_INT64: return Int(64);
  case HL_FLOAT32: return Float(32);
  case HL_FLOAT64: return Float(64);
  default: break;
  }
  throw CompileError("halua: no Halide type for dtype " + std::string(hl_dtype_name(t)));
}

namespace {
struct BufferTypes {
  halide_type_t of[HL_NDTYPES];
  BufferTypes() {
    for (int d = 0; d < HL_NDTYPES; d++)
      of[d] = hl_dtype_is_complex((hl_dtype)d) ? halide_type_t() : (halide_type_t)hl_halide_type((hl_dtype)d);
  }
};
const BufferTypes buffer_types;
}  // namespace

halide_type_t hl_buffer_type(hl_dtype t) { return buffer_types.of[t]; }

/* ---- float16 and bfloat16 ----
 * Buffers hold their bit patterns as uint16 and pipelines compute in float32 (as JAX does on the
 * CPU): a parameter is decoded when read, every node of those dtypes rounds its float32 result
 * to the dtype (encode, then decode), and an output is encoded. Only integer and float32
 * arithmetic reaches the code generators, so CUDA (whose bfloat16 Halide 14 cannot compile) and
 * x86 run the same code. Rounding is to nearest, ties to even; NaN stays NaN. */
Type hl_compute_type(hl_dtype t) { return hl_dtype_is_half(t) ? Float(32) : hl_halide_type(t); }

static Expr u32c(uint32_t v) { return Internal::make_const(UInt(32), (uint64_t)v); }

Expr hl_half_encode(Expr x, hl_dtype t) {
  Expr u = reinterpret(UInt(32), x);
  if (t == HL_BFLOAT16) {
    Expr nan = (u >> 16) | u32c(0x40);
    Expr rounded = (u + u32c(0x7fff) + ((u >> 16) & u32c(1))) >> 16;
    return cast(UInt(16), select((u & u32c(0x7fffffff)) > u32c(0x7f800000), nan, rounded));
  }
  Expr sign = (u >> 16) & u32c(0x8000), a = u & u32c(0x7fffffff);
  Expr nan = sign | u32c(0x7e00) | ((a >> 13) & u32c(0x3ff));
  Expr inf = sign | u32c(0x7c00);
  /* below 2^-14 the steps are 2^-24: scaling is exact and round() ties to even */
  Expr sub = sign | cast(UInt(32), round(reinterpret(Float(32), a) * 16777216.0f));
  Expr normal = sign | ((a - u32c(0x38000000) + u32c(0xfff) + ((a >> 13) & u32c(1))) >> 13);
  return cast(UInt(16), select(a > u32c(0x7f800000), nan, a >= u32c(0x477ff000), inf, a < u32c(0x38800000), sub, normal));
}

Expr hl_half_decode(Expr h, hl_dtype t) {
  Expr w = cast(UInt(32), h);
  if (t == HL_BFLOAT16) return reinterpret(Float(32), w << 16);
  Expr sign = (w & u32c(0x8000)) << 16, e = (w >> 10) & u32c(0x1f), m = w & u32c(0x3ff);
  Expr sub = reinterpret(UInt(32), cast(Float(32), m) * 5.9604644775390625e-8f) | sign;
  Expr special = sign | u32c(0x7f800000) | (m << 13);
  Expr normal = sign | ((e + u32c(112)) << 23) | (m << 13);
  return reinterpret(Float(32), select(e == u32c(0), sub, e == u32c(31), special, normal));
}

/* a float64 to float32 rounded toward zero with the last bit set when inexact: rounding that
 * to a 2-byte float again rounds the double once (no double rounding) */
static Expr float_round_odd(Expr d) {
  Expr f = cast(Float(32), d);
  Expr u = reinterpret(UInt(32), f);
  Expr exact = hl_is_nan(d) || cast(Float(64), f) == d;
  Expr odd = select(abs(cast(Float(64), f)) > abs(d), u - u32c(1), u) | u32c(1);
  return reinterpret(Float(32), select(exact, u, odd));
}

/* any value as the float32 holding its nearest dtype-t value */
Expr hl_half_round(Expr x, hl_dtype t) {
  Type ty = x.type();
  if (ty.is_float() && ty.bits() == 64) x = float_round_odd(x);
  else if (!ty.is_float() && ty.bits() > 16) x = float_round_odd(cast(Float(64), x));
  else if (ty != Float(32)) x = cast(Float(32), x);
  return hl_half_decode(hl_half_encode(x, t), t);
}

const std::vector<Var> &hl_vars(int rank) {
  static const std::vector<Var> all = {Var("x0"), Var("x1"), Var("x2"), Var("x3"),
                                       Var("x4"), Var("x5"), Var("x6"), Var("x7")};
  static std::vector<Var> by_rank[HL_MAX_DIMS + 1];
  static bool ready = false;
  if (!ready) {
    for (int r = 0; r <= HL_MAX_DIMS; r++) by_rank[r].assign(all.begin(), all.begin() + r);
    ready = true;
  }
  return by_rank[rank];
}

/* NaN and Inf tests on the bit pattern: Halide's is_nan is compiled with no-NaNs math attributes
 * and folds to false, even with StrictFloat. */
static Expr float_bits(Expr x, uint64_t mask) {
  Type u = UInt(x.type().bits());
  return reinterpret(u, x) & Internal::make_const(u, (uint64_t)mask);
}
static Expr exponent_all_ones(const Expr &x) {
  return Internal::make_const(UInt(x.type().bits()), (uint64_t)(x.type().bits() == 64 ? 0x7ff0000000000000ull : 0x7f800000ull));
}
static uint64_t magnitude_mask(const Expr &x) { return x.type().bits() == 64 ? 0x7fffffffffffffffull : 0x7fffffffull; }

Expr hl_is_nan(Expr x) { return float_bits(x, magnitude_mask(x)) > exponent_all_ones(x); }
/* |x| with the sign bit cleared, as C's fabs and NumPy: Halide 14 compiles abs of a float as
 * select(x >= 0, x, -x), which keeps -0.0 (and flips a NaN's sign); only LLVM's no-signed-zeros
 * flag had made it fabs, and IEEE arithmetic has no such flag (abs(-0.0) was -0.0 under jit) */
Expr hl_fabs(Expr x) { return reinterpret(x.type(), float_bits(x, magnitude_mask(x))); }
Expr hl_is_inf(Expr x) { return float_bits(x, magnitude_mask(x)) == exponent_all_ones(x); }
Expr hl_is_finite(Expr x) {
  uint64_t e = x.type().bits() == 64 ? 0x7ff0000000000000ull : 0x7f800000ull;
  return float_bits(x, e) != exponent_all_ones(x);
}

/* A CPU jit pipeline's shapes are part of its key, and every buffer it is run with starts at 0
 * and has its node's shape (to_buffer and the buffers between parts, hl_backend.cpp; an exported
 * library's, hl_export_support.cpp), so its parameters and outputs declare their bounds: Halide's
 * indexing and loop extents become constants, and a cold compile takes 70-95% of the time
 * (docs/benchmarks.md, "Declared bounds"). Three faults of Halide 14 came with constant extents,
 * each mended at its cause: a guarded vector tail dropped by its simplifier (bind_whole,
 * hl_schedule.cpp), a wrong alignment of a strided load at a constant start, and an assert on a
 * guarded vector that starts before its buffer (hl_codegen_mends.cpp). Not for shape-generic
 * eager kernels or polymorphic programs, not on CUDA, where it has not run yet, and not for an
 * axis past Halide's 32-bit extents (an empty array may have one; the call rejects it). */
static void declare_bounds(const hl_graph *g, OutputImageParam b, const hl_type &t) {
  if (!hl_graph_sized(g) || g->device != HL_DEVICE_CPU) return;
  for (int d = 0; d < t.ndim; d++)
    if (t.shape[d] > INT32_MAX) return;
  for (int d = 0; d < t.ndim; d++) b.dim(d).set_bounds(0, (int)t.shape[t.ndim - 1 - d]);
}

namespace {

struct Lowerer {
  const hl_graph *g;
  hl_lowered &L;
  std::vector<Expr> constants;   /* by node: a constant node's value (HL_P_CONST) */

  const hl_node &node(int i) const { return g->nodes[i]; }
  int input(const hl_node &n, int k) const { return hl_node_inputs(g, &n)[k]; }

  /* Extent of numpy axis a of node i: a constant in a jit pipeline; in an eager kernel
   * (dynamic graph) read from the input buffer, so one kernel serves every shape; in a
   * polymorphic program an affine function of the symbols (hl_symbolic.h). */
  Expr extent(int i, int a) const {
    const hl_node &n = node(i);
    if (g->sym) return number(i, HL_SYM_SHAPE, a, n.type.shape[a]);
    if (!g->dynamic) return Expr((int)n.type.shape[a]);
    if (n.prim != HL_P_PARAM) throw CompileError("halua: internal: dynamic extent of a non-parameter");
    return L.params[n.attrs.i[0]].dim(n.type.ndim - 1 - a).extent();
  }

  /* The traced extent of node i's axis a, as a polymorphic program's expression: where the
   * lowering takes a node's size as it was traced (in eager kernels too, whose extents are
   * read from buffers only for their parameters) */
  Expr traced_extent(int i, int a) const { return g->sym ? extent(i, a) : Expr((int)node(i).type.shape[a]); }

  /* symbol j of a polymorphic program: its parameter's extent along its axis */
  Expr symbol(int j) const {
    const ImageParam &p = L.params[g->sym->param[j]];
    return p.dim(p.dimensions() - 1 - g->sym->axis[j]).extent();
  }
  /* a size-like number of node i (field and index as hl_symbolic.h's slots): `traced` where it is
   * a constant, else (c + sum a_j s_j) / HL_SYM_DEN, in 64 bits where the division is not whole */
  Expr number(int i, int field, int index, int64_t traced) const {
    const hl_sym_slot *sl = hl_sym_find(g->sym, i, field, index);
    if (!sl) return Expr((int)traced);
    bool whole = sl->c % HL_SYM_DEN == 0;
    for (int j = 0; j < g->sym->nsym; j++) whole = whole && sl->a[j] % HL_SYM_DEN == 0;
    if (whole) {
      Expr e = Expr((int)(sl->c / HL_SYM_DEN));
      for (int j = 0; j < g->sym->nsym; j++)
        if (sl->a[j]) e = e + (int)(sl->a[j] / HL_SYM_DEN) * symbol(j);
      return e;
    }
    Expr e = Expr(sl->c);
    for (int j = 0; j < g->sym->nsym; j++)
      if (sl->a[j]) e = e + Expr(sl->a[j]) * cast(Int(64), symbol(j));
    return cast(Int(32), e / Expr((int64_t)HL_SYM_DEN));
  }
  /* attrs.i[k] of node i, as an expression (a slice's start and step, a scatter's target length) */
  Expr attr(int i, int k) const {
    int64_t v = node(i).attrs.i[k];
    return g->sym ? number(i, HL_SYM_ATTR_I, k, v) : Expr((int)v);
  }

  /* Floats test their magnitude bits, so NaN is true on every target: Halide compiles a float
   * != as an ordered compare, which NVPTX keeps (NaN != 0 is false there). */
  static Expr as_bool(Expr e) {
    if (e.type().is_float()) return float_bits(e, magnitude_mask(e)) != make_zero(UInt(e.type().bits()));
    return e != make_zero(e.type());
  }
  static Expr ordered(Expr a, Expr b) { return !hl_is_nan(a) && !hl_is_nan(b); }
  static Expr from_bool(Expr c) { return cast(UInt(8), c); }

  /* The Halide dims (innermost first) of a rank-r node, as Exprs. */
  static std::vector<Expr> args_of(int r) {
    std::vector<Expr> a;
    for (const Var &v : hl_vars(r)) a.push_back(v);
    return a;
  }

  /* a node's value: float16 and bfloat16 parameters and host stages hold bit patterns, decoded
   * here; a scatter_add holds float32 sums, rounded here; every other node of those dtypes is
   * already a rounded float32 */
  Expr call(int i, const std::vector<Expr> &args) const {
    /* a constant (through broadcasts and reshapes) is its value: a Func of its own would cost
     * Halide's per-Func passes for nothing, and most nodes of an unrolled loop are constants */
    int c = const_source(i);
    if (c >= 0 && constants[c].defined()) return constants[c];
    Expr e = L.funcs[i](args);
    hl_dtype t = node(i).type.dtype;
    if (!hl_dtype_is_half(t)) return e;
    if (e.type() == UInt(16)) return hl_half_decode(e, t);
    return hl_is_scatter(node(i).prim) ? hl_half_round(e, t) : e;
  }
  /* a result of dtype t, rounded when t is a 2-byte float */
  static Expr fit(Expr e, hl_dtype t) { return hl_dtype_is_half(t) ? hl_half_round(e, t) : e; }

  /* a C math library function of doubles (or floats): on CUDA its libdevice twin, which
   * Halide links into the PTX (a call to plain `erf` would leave the module unloadable) */
  Expr libm(const char *name, std::vector<Expr> args) const {
    std::string fn = g->device == HL_DEVICE_CUDA ? std::string("__nv_") + name : std::string(name);
    if (args[0].type() == Float(32)) fn += "f";
    return Internal::Call::make(args[0].type(), fn, args, Internal::Call::PureExtern);
  }

  Expr unary(int prim, Expr x, hl_dtype t) const {
    Type ty = x.type();
    bool f32 = ty == Float(32), fl = hl_dtype_is_float(t);
    switch (prim) {
    /* (a float as a product by -1: Halide's -x is 0 - x, which in IEEE arithmetic, as jitted
     * programs compile, gives +0 for x = +0 where NumPy gives -0) */
    case HL_P_NEG: return t == HL_UINT8 ? cast(ty, 0 - cast(Int(32), x)) : fl ? x * Internal::make_const(ty, -1) : -x;
    case HL_P_ABS: return fl ? hl_fabs(x) : cast(ty, abs(x));
    case HL_P_SIGN:
      return select(x > make_zero(ty), make_one(ty), x < make_zero(ty), cast(ty, -1), fl ? x * make_zero(ty) + x : x);
    case HL_P_SQUARE: return x * x;
    case HL_P_FLOOR: return fl ? floor(x) : x;
    case HL_P_CEIL: return fl ? ceil(x) : x;
    /* Halide rounds half to even, like NumPy, except float64 on CUDA, which comes out half away
     * from zero (libdevice's rint too): there, ties go to the even neighbour explicitly */
    case HL_P_ROUND: {
      if (!fl) return x;
      if (g->device != HL_DEVICE_CUDA || f32) return round(x);
      Expr r = floor(x), d = x - r, half = Internal::make_const(ty, 0.5), one = make_one(ty);
      Expr even = floor(r * half) * Internal::make_const(ty, 2) == r;
      Expr res = select(d > half, r + one, d < half, r, even, r, r + one);
      /* -0.4 rounds to -0: x's sign bit on a zero */
      return select(res == make_zero(ty), signed_zero(bits64(x)), res);
    }
    case HL_P_RECIPROCAL: return make_one(ty) / x;
    case HL_P_EXP: return f32 ? hl_vmath_exp(x) : exp(x);
    case HL_P_EXPM1: return f32 ? hl_vmath_expm1(x) : libm("expm1", {x});
    case HL_P_LOG: return f32 ? hl_vmath_log(x) : log(x);
    case HL_P_LOG1P: return f32 ? hl_vmath_log1p(x) : libm("log1p", {x});
    case HL_P_SQRT: return sqrt(x);
    case HL_P_RSQRT: return make_one(ty) / sqrt(x);
    case HL_P_SIN: return f32 ? hl_vmath_sin(x) : sin(x);
    case HL_P_COS: return f32 ? hl_vmath_cos(x) : cos(x);
    case HL_P_TAN: return f32 ? hl_vmath_tan(x) : tan(x);
    case HL_P_ASIN: return f32 ? hl_vmath_asin(x) : asin(x);
    case HL_P_ACOS: return f32 ? hl_vmath_acos(x) : acos(x);
    case HL_P_ATAN: return f32 ? hl_vmath_atan(x) : atan(x);
    case HL_P_SINH: return f32 ? hl_vmath_sinh(x) : sinh(x);
    case HL_P_COSH: return f32 ? hl_vmath_cosh(x) : cosh(x);
    case HL_P_TANH: return f32 ? hl_vmath_tanh(x) : tanh(x);
    case HL_P_ERF: return f32 ? hl_vmath_erf(x) : libm("erf", {x});
    case HL_P_ISNAN: return from_bool(fl ? hl_is_nan(x) : const_false());
    case HL_P_ISINF: return from_bool(fl ? hl_is_inf(x) : const_false());
    case HL_P_ISFINITE: return from_bool(fl ? hl_is_finite(x) : const_true());
    case HL_P_LOGICAL_NOT: return from_bool(!as_bool(x));
    }
    throw CompileError(std::string("halua: internal: no lowering for ") + hl_prims[prim].name);
  }

  /* a float64 zero with the sign bit of `bits` (a float64's bits, as UInt(64)): from the bits,
   * since Halide's simplifier folds x * 0 to +0 and kernels compiled without signed zeros may
   * fold a select between -0.0 and 0.0 either way */
  static Expr signed_zero(Expr bits) {
    return reinterpret(Float(64), bits & Internal::make_const(UInt(64), (uint64_t)1 << 63));
  }
  static Expr bits64(Expr x) { return reinterpret(UInt(64), x); }

  /* b == v. A constant b is compared here: Halide 14's simplifier folds c0 == c1 through
   * c0 - c1, which overflows for INT_MAX == -1 ("Signed integer overflow occurred during
   * constant-folding": x % 2147483647 and x // 2147483647 did not compile under jit) */
  static Expr equals(Expr b, int64_t v) {
    if (const int64_t *c = as_const_int(b)) return Internal::make_bool(*c == v);
    if (const uint64_t *u = as_const_uint(b)) return Internal::make_bool(v >= 0 && *u == (uint64_t)v);
    return b == Internal::make_const(b.type(), v);
  }
  /* Python's conventions: the remainder takes the divisor's sign; division floors. */
  /* The hardware traps on x / 0 and INT_MIN / -1 (the round-to-zero intrinsics are raw
   * instructions): those divisors are replaced first and their results chosen after. */
  static Expr safe_divisor(Expr b) {
    Expr risky = equals(b, 0);
    if (b.type().is_int()) risky = risky || equals(b, -1);
    return select(risky, make_one(b.type()), b);
  }
  static Expr int_floordiv(Expr a, Expr b) {
    Expr sb = safe_divisor(b);
    /* Halide's own division, which floors for a positive divisor and keeps the remainder
     * non-negative for a negative one (one less than the floor then, unless exact). Not
     * div_round_to_zero: Halide 14 lowers that, for a constant divisor from 2 to 255 of 8, 16
     * and 32 bits, through a multiplier table whose quotients are wrong (4 // 3 was -1 under
     * jit, where the divisor is a constant) */
    Expr q = a / sb, r = a % sb;
    Expr zero = make_zero(a.type());
    Expr fq = select(sb < zero && r != zero, q - make_one(a.type()), q);
    if (a.type().is_int()) fq = select(equals(b, -1), zero - a, fq);
    return select(equals(b, 0), zero, fq);
  }
  static Expr int_mod(Expr a, Expr b) {
    Expr sb = safe_divisor(b);
    Expr r = mod_round_to_zero(a, sb), zero = make_zero(a.type());
    Expr fr = select(r != zero && ((r < zero) != (sb < zero)), r + sb, r);
    if (a.type().is_int()) fr = select(equals(b, -1), zero, fr);
    return select(equals(b, 0), zero, fr);
  }
  Expr float_mod(Expr a, Expr b) const {
    /* fmod in double keeps the remainder exact for float32; then move it to b's sign. A zero
     * remainder is a zero of b's sign, as NumPy makes it (fmod gives a's: -4 % 2 was -0.0 under
     * jit, and rsqrt of it -inf). */
    Expr ad = cast(Float(64), a), bd = cast(Float(64), b);
    Expr r = libm("fmod", {ad, bd});
    Expr z = make_zero(Float(64));
    Expr fixed = select(r == z, signed_zero(bits64(bd)), (r < z) != (bd < z), r + bd, r);
    return cast(a.type(), fixed);
  }
  /* NumPy's divmod: the quotient comes from the remainder, so inf // x is NaN, and the
   * result is the nearest integer to (a - fmod(a, b)) / b */
  Expr float_floordiv(Expr a, Expr b) const {
    Expr ad = cast(Float(64), a), bd = cast(Float(64), b), z = make_zero(Float(64));
    Expr one = make_one(Float(64)), half = Internal::make_const(Float(64), 0.5);
    Expr m = libm("fmod", {ad, bd});
    Expr div = strict_float((ad - m) / bd);
    Expr fix = m != z && ((bd < z) != (m < z));
    div = select(fix, div - one, div);
    Expr fd = floor(div);
    fd = select(div - fd > half, fd + one, fd);
    Expr q = select(div != z, fd, signed_zero(bits64(ad) ^ bits64(bd)));   /* a zero has the sign of a / b */
    return cast(a.type(), select(bd == z, ad / bd, q));
  }
  static Expr int_pow(Expr a, Expr e) {
    /* square-and-multiply over every bit of the exponent; negative exponents give 0 except for
     * bases 1 and -1 (integers have no fractions), as JAX does. The products are unsigned, so
     * they wrap as NumPy's do: a signed product that overflows is undefined in Halide, and one
     * of a constant base (3 ^ x) failed the compile ("Signed integer overflow occurred during
     * constant-folding"). Each step is a Let, as in threefry: inlined, every step uses the one
     * before twice, a tree of 2^31 nodes for int32 (a 0-d eager pow ran out of memory) */
    Type t = a.type(), u = t.with_code(halide_type_uint), s = t.with_code(halide_type_int);
    static int uid = 0;
    std::string tag = "ip" + std::to_string(uid++) + "_";
    std::vector<std::pair<std::string, Expr>> lets;
    auto bind = [&](Expr v) {
      std::string nm = tag + std::to_string(lets.size());
      lets.push_back({nm, reinterpret(s, v)});
      return reinterpret(u, Internal::Variable::make(s, nm));
    };
    Expr ue = bind(reinterpret(u, e)), base = bind(reinterpret(u, a)), a0 = reinterpret(t, base);
    Expr result = make_one(u);
    int nbits = t.bits() - (t.is_uint() ? 0 : 1);
    for (int bit = 0; bit < nbits; bit++) {
      Expr set = ((ue >> bit) & make_one(u)) != make_zero(u);
      result = bind(select(set, result * base, result));
      if (bit + 1 < nbits) base = bind(base * base);
    }
    Expr r = reinterpret(t, result), one = make_one(t), ee = reinterpret(t, ue);
    Expr body = t.is_uint() ? r
                            : select(ee >= make_zero(t), r, a0 == one, one, a0 == cast(t, -1),
                                     select((ee & one) != make_zero(t), cast(t, -1), one), make_zero(t));
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) body = Internal::Let::make(it->first, it->second, body);
    return body;
  }

  Expr binary(int prim, Expr a, Expr b, hl_dtype t) const {
    bool fl = hl_dtype_is_float(t), boolean = t == HL_BOOL;
    switch (prim) {
    case HL_P_ADD: return boolean ? from_bool(as_bool(a) || as_bool(b)) : a + b;
    case HL_P_SUB: return a - b;
    case HL_P_MUL: return boolean ? from_bool(as_bool(a) && as_bool(b)) : a * b;
    case HL_P_DIV: return a / b;
    case HL_P_POW: return !fl ? int_pow(a, b) : a.type() == Float(32) ? hl_vmath_pow(a, b) : pow(a, b);
    case HL_P_MOD: return fl ? float_mod(a, b) : int_mod(a, b);
    case HL_P_FLOOR_DIVIDE: return fl ? float_floordiv(a, b) : int_floordiv(a, b);
    /* NaN wins, as in NumPy. The NaN tests come first and alone: CUDA's code generator assumes
     * no NaNs and folds a NaN-blind comparison into fmax, which drops them */
    case HL_P_MAXIMUM: return fl ? select(hl_is_nan(a), a, hl_is_nan(b), b, a > b, a, b) : max(a, b);
    case HL_P_MINIMUM: return fl ? select(hl_is_nan(a), a, hl_is_nan(b), b, a < b, a, b) : min(a, b);
    case HL_P_ATAN2: return a.type() == Float(32) ? hl_vmath_atan2(a, b) : atan2(a, b);
    /* Halide's simplifier rewrites a >= b as !(a < b) and the like, which is wrong for NaN:
     * float comparisons are guarded by bit-pattern NaN tests (any NaN: only != holds) */
    case HL_P_EQ: return from_bool(fl ? ordered(a, b) && a == b : a == b);
    case HL_P_NE: return from_bool(fl ? !ordered(a, b) || a != b : a != b);
    case HL_P_LT: return from_bool(fl ? ordered(a, b) && a < b : a < b);
    case HL_P_LE: return from_bool(fl ? ordered(a, b) && a <= b : a <= b);
    case HL_P_GT: return from_bool(fl ? ordered(a, b) && a > b : a > b);
    case HL_P_GE: return from_bool(fl ? ordered(a, b) && a >= b : a >= b);
    case HL_P_LOGICAL_AND: return from_bool(as_bool(a) && as_bool(b));
    case HL_P_LOGICAL_OR: return from_bool(as_bool(a) || as_bool(b));
    case HL_P_LOGICAL_XOR: return from_bool(as_bool(a) != as_bool(b));
    case HL_P_BITWISE_AND: return a & b;
    case HL_P_BITWISE_OR: return a | b;
    case HL_P_BITWISE_XOR: return a ^ b;
    case HL_P_LEFT_SHIFT:
    case HL_P_RIGHT_SHIFT: {
      /* Halide (like C) leaves shifts by the width or more undefined, and shifts a signed value
       * the other way for a negative amount: clamp, then pick NumPy's results out of range */
      Type ty = a.type();
      Expr bits = Internal::make_const(ty, ty.bits()), zero = make_zero(ty);
      Expr in_range = b >= zero && b < bits;
      Expr amount = clamp(b, zero, bits - 1);
      if (prim == HL_P_LEFT_SHIFT) return select(in_range, a << amount, zero);
      Expr fill = ty.is_int() ? select(a < zero, Internal::make_const(ty, -1), zero) : zero;
      return select(in_range, a >> amount, fill);
    }
    }
    throw CompileError(std::string("halua: internal: no lowering for ") + hl_prims[prim].name);
  }

  static Expr convert(Expr x, hl_dtype to, hl_dtype from) {
    if (to == HL_BOOL) return from_bool(as_bool(x));
    /* A bool becomes a number through a select, not a cast: the simplifier sees through the
     * uint8 of a comparison to its 1-bit value, and Halide 14's FindIntrinsics then narrows a
     * vectorised product of two such casts (mask * mask, square(mask), mask * -1, an integer
     * pow) one halving after another down to 1 bit, failing an internal assertion ("Attempting
     * to narrow a 1-bit type"). A select of 1 and 0 is never narrowed, and the simplifier turns
     * a product with it into another select. */
    if (from == HL_BOOL && !hl_dtype_is_half(to)) {
      Type ty = hl_halide_type(to);
      return select(as_bool(x), make_one(ty), make_zero(ty));
    }
    if (hl_dtype_is_half(to)) return hl_half_round(x, to);
    Type ty = hl_halide_type(to);
    /* Halide 14 rewrites (float64)uint8 * c into a widening multiply of uint16 and float16
     * that its codegen rejects; the strict_float call hides the cast from that rewrite */
    if (x.type() == UInt(8) && ty == Float(64)) return strict_float(cast(ty, x));
    return cast(ty, x);
  }

  /* Threefry-2x32, 20 rounds (Salmon et al., SC'11), in uint32 arithmetic. Each intermediate is
   * a Let, so the expression stays linear in the rounds (inlined, the reuse of x0 and x1 would
   * make it a tree of 2^20 nodes for Halide's passes). The Let values are wrapped in a
   * reinterpret to int32 (free in LLVM): Halide's simplifier substitutes Lets whose value is a
   * sum with a variable operand, which re-inlines the rounds where no loop holds them. */
  static Expr threefry(const std::vector<Expr> &in) {
    Type u32 = UInt(32), i32 = Int(32), out = in[0].type();
    static int uid = 0;
    std::string tag = "tf" + std::to_string(uid++) + "_";
    std::vector<std::pair<std::string, Expr>> lets;
    auto bind = [&](Expr v) {
      std::string nm = tag + std::to_string(lets.size());
      lets.push_back({nm, reinterpret(i32, v)});
      return reinterpret(u32, Internal::Variable::make(i32, nm));
    };
    Expr k0 = bind(cast(u32, in[0])), k1 = bind(cast(u32, in[1]));
    Expr ks[3] = {k0, k1, bind(k0 ^ k1 ^ Internal::make_const(u32, 0x1BD11BDA))};
    Expr x0 = bind(cast(u32, in[2]) + k0), x1 = bind(cast(u32, in[3]) + k1);
    static const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
    for (int g = 1; g <= 5; g++) {
      for (int r : rot[(g - 1) % 2]) {
        x0 = bind(x0 + x1);
        x1 = bind(((x1 << r) | (x1 >> (32 - r))) ^ x0);
      }
      x0 = bind(x0 + ks[g % 3]);
      x1 = bind(x1 + ks[(g + 1) % 3] + Internal::make_const(u32, g));
    }
    Expr body = (cast(UInt(64), x0) << 32) | cast(UInt(64), x1);
    body = cast(out, body);
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) body = Internal::Let::make(it->first, it->second, body);
    return body;
  }

  /* the constant node j is (through reshapes and broadcasts), or -1 */
  int const_source(int j) const {
    while (hl_prims[node(j).prim].kind == HL_K_VIEW && node(j).nin == 1 &&
           (node(j).prim == HL_P_BROADCAST || node(j).prim == HL_P_RESHAPE))
      j = input(node(j), 0);
    return node(j).prim == HL_P_CONST ? j : -1;
  }
  /* Whether the constants of a chain of products and quotients (or of sums and differences)
   * that node `other` starts stay finite and nonzero when Halide's simplifier folds them into one
   * with f, the constant operand k of an operation prim: (x * 1e20) * 1e20 became x * inf on
   * float32, which fast-math made garbage */
  bool chain_finite(int prim, int k, double f, int other, hl_dtype dt) const {
    bool product = prim == HL_P_MUL || (prim == HL_P_DIV && k == 1), sum = prim == HL_P_ADD || prim == HL_P_SUB;
    if (!product && !sum) return true;
    double acc = prim == HL_P_DIV ? 1 / f : prim == HL_P_SUB && k == 1 ? -f : f;
    for (int depth = 0; depth < 64; depth++) {
      const hl_node &m = node(other);
      bool link = product ? (m.prim == HL_P_MUL || m.prim == HL_P_DIV) : (m.prim == HL_P_ADD || m.prim == HL_P_SUB);
      if (!link || m.nin != 2) return true;
      int c0 = const_source(input(m, 0)), c1 = const_source(input(m, 1));
      int kc = c1 >= 0 ? 1 : c0 >= 0 && m.prim != HL_P_DIV ? 0 : -1;   /* (c / x is no link) */
      if (kc < 0) return true;
      double g = node(kc ? c1 : c0).attrs.f;
      double next = product ? (m.prim == HL_P_DIV ? acc / g : acc * g) : (m.prim == HL_P_SUB && kc == 1 ? acc - g : acc + g);
      if (!hl_finite_in(dt, next) || (product && hl_round_in(dt, next) == 0 && acc != 0 && g != 0)) return false;
      acc = next;
      other = input(m, 1 - kc);
    }
    return true;
  }

  /* v, with bits Halide cannot see through: xor-ed with a 0 that is 1 only for one NaN payload
   * of guard (the other operand, which makes the result NaN anyway) */
  static Expr opaque(Expr v, Expr guard) {
    Type u = UInt(v.type().bits()), ug = UInt(guard.type().bits());
    Expr payload = Internal::make_const(ug, (uint64_t)(ug.bits() == 64 ? 0x7ff80000c0ffee00ULL : 0x7fc0ffeeULL));
    return reinterpret(v.type(), reinterpret(u, v) ^ cast(u, reinterpret(ug, guard) == payload));
  }

  void elemwise(int i) {
    const hl_node &n = node(i);
    int r = n.type.ndim;
    std::vector<Expr> args = args_of(r);
    hl_dtype tin = node(input(n, n.prim == HL_P_SELECT ? 1 : 0)).type.dtype;
    std::vector<Expr> x;
    for (int k = 0; k < n.nin; k++) x.push_back(call(input(n, k), args));
    /* Pipelines compile with LLVM's fast-math flags (no NaNs), so a float operation on a constant
     * inf or NaN, or a division by a constant 0 (which Halide turns into a product by 1/0 = inf),
     * is folded to garbage: x / 0 gave NaN and random values instead of inf, a mean over an empty
     * axis (a sum divided by the count 0) random values instead of NaN, and bfloat16 x * inf was
     * stored as LLVM's poison. Such a constant goes into the operation opaque, as a value from
     * memory would (Halide also rejects a division by a constant 0), and the operation is
     * compiled as strict float, so that LLVM does not assume its result finite either */
    bool strict = false;
    if (n.nin == 2 && n.prim != HL_P_SELECT && hl_dtype_is_float(node(input(n, 0)).type.dtype) &&
        hl_dtype_is_float(node(input(n, 1)).type.dtype) && x[0].type().bits() == x[1].type().bits()) {
      for (int k = 0; k < 2; k++) {
        int c = const_source(input(n, k));
        if (c < 0) continue;
        double f = node(c).attrs.f;
        bool divisor = k == 1 && (n.prim == HL_P_DIV || n.prim == HL_P_MOD || n.prim == HL_P_FLOOR_DIVIDE);
        /* (1e39 is inf as a float32; Halide divides by a constant through its reciprocal, which
         * for a float32 divisor of 1e-39 is inf too. And its simplifier takes x * 0 for 0 and
         * x + 0 for x, where IEEE gives NaN for x NaN or inf, and +0 for x = -0) */
        hl_dtype dt = node(c).type.dtype;
        bool zero_identity = f == 0 && (n.prim == HL_P_MUL || n.prim == HL_P_ADD || n.prim == HL_P_SUB);
        if (!hl_finite_in(dt, f) || (divisor && (f == 0 || !hl_finite_in(dt, 1 / f))) || zero_identity ||
            !chain_finite(n.prim, k, f, input(n, 1 - k), dt)) {
          x[k] = opaque(x[k], x[1 - k]);
          strict = true;
        }
      }
    }
    Expr e;
    if (n.prim == HL_P_CAST) e = convert(x[0], n.attrs.dtype, tin);
    else if (n.prim == HL_P_STOP_GRADIENT) e = x[0];
    else if (n.prim == HL_P_SELECT) e = select(as_bool(x[0]), x[1], x[2]);
    else if (n.prim == HL_P_THREEFRY) e = threefry(x);
    else if (n.nin == 1) e = unary(n.prim, x[0], tin);
    else e = binary(n.prim, x[0], x[1], tin);
    if (strict) e = strict_float(e);
    if (n.prim != HL_P_CAST) e = fit(e, n.type.dtype);
    L.funcs[i](hl_vars(r)) = e;
  }

  void reduce(int i) {
    const hl_node &n = node(i);
    int src = input(n, 0);
    const hl_node &in = node(src);
    int rin = in.type.ndim, rout = n.type.ndim;
    Region ranges;   /* reduced axes, innermost first */
    for (int a = rin - 1; a >= 0; a--)
      if (n.attrs.i[0] >> a & 1) ranges.push_back(Range(0, extent(src, a)));
    RDom rd(ranges, "r" + std::to_string(i));
    L.rdoms[i] = rd;
    /* input coordinates: reduced axes take the RDom's variables, kept ones the output's vars */
    std::vector<Expr> in_args(rin);
    const std::vector<Var> &ov = hl_vars(rout);
    int next_out = rout - 1, next_r = (int)ranges.size() - 1;
    for (int a = 0; a < rin; a++) {
      Expr v = (n.attrs.i[0] >> a & 1) ? Expr(rd[next_r--]) : Expr(ov[next_out--]);
      in_args[rin - 1 - a] = v;
    }
    Expr x = call(src, in_args);
    /* Halide runs an update that names none of its RDom's variables once, not once per reduced
     * element: a summand that is the same at every reduced coordinate (a broadcast constant,
     * which is the cotangent of a sum under grad) gave sum(broadcast(1)) = 1, so a jitted
     * grad(sum(x @ w + b)) had a bias gradient of 1 for a batch of 4. A zero term that names
     * the RDom keeps its loop (the simplifier drops the term afterwards). */
    bool uses_rd = false;
    for (int k = 0; k < rd.dimensions(); k++) uses_rd = uses_rd || Internal::expr_uses_var(x, rd[k].name());
    if (!uses_rd && rd.dimensions() > 0) x = x + cast(x.type(), rd[0]) * make_zero(x.type());
    Type ty = hl_compute_type(n.type.dtype);
    Func &f = L.funcs[i];
    bool fl = hl_dtype_is_float(in.type.dtype), half = hl_dtype_is_half(n.type.dtype);
    switch (n.prim) {
    case HL_P_SUM:
      if (n.type.dtype == HL_FLOAT32 || half) {
        /* float32 sums accumulate in float64 (rounded once at the end): a float32 accumulator
         * drifts by parts per thousand over millions of terms, where NumPy sums pairwise */
        Func acc("acc" + std::to_string(i));
        acc(ov) = make_zero(Float(64));
        acc(ov) += cast(Float(64), x);
        L.helpers[i] = acc;
        f(ov) = half ? hl_half_round(acc(ov), n.type.dtype) : cast(ty, acc(ov));
      } else {
        f(ov) = make_zero(ty);
        f(ov) += cast(ty, x);
      }
      break;
    case HL_P_PROD:
      if (half) {   /* a float32 product, rounded once */
        Func acc("acc" + std::to_string(i));
        acc(ov) = make_one(ty);
        acc(ov) *= x;
        L.helpers[i] = acc;
        f(ov) = hl_half_round(acc(ov), n.type.dtype);
        break;
      }
      f(ov) = make_one(ty);
      f(ov) *= cast(ty, x);
      break;
    case HL_P_MAX:
    case HL_P_MIN: {
      bool mx = n.prim == HL_P_MAX;
      if (!fl) {
        f(ov) = mx ? ty.min() : ty.max();
        f(ov) = mx ? max(f(ov), x) : min(f(ov), x);
        break;
      }
      /* Floats reduce as integer keys that order like the floats (the sign-magnitude bits with
       * the magnitude flipped below zero), NaN made the largest key for max and the smallest
       * for min, so that NaN wins as in NumPy. A plain integer max or min is associative:
       * Halide's rfactor splits it into vector lanes and parallel parts, which the NaN-aware
       * select it replaced did not allow. */
      int bits = ty.bits();
      Type kt = Int(bits);
      Expr mag = Internal::make_const(kt, bits == 64 ? (int64_t)0x7fffffffffffffffll : (int64_t)0x7fffffff);
      Expr nan_key = Internal::make_const(kt, mx ? (bits == 64 ? (int64_t)0x7ff8000000000000ll : (int64_t)0x7fc00000)
                                                 : (bits == 64 ? (int64_t)0xfff8000000000000ull : (int64_t)(int32_t)0xffc00000u));
      /* its own inverse; a select rather than a sign-spreading shift, which the CUDA
       * backend miscompiled for 64-bit keys */
      auto flip = [&](Expr b) { return select(b < make_zero(kt), b ^ mag, b); };
      auto key = [&](Expr v) { return flip(select(hl_is_nan(v), nan_key, reinterpret(kt, v))); };
      Func keys("key" + std::to_string(i));
      keys(ov) = key(cast(ty, mx ? -INFINITY : INFINITY));
      keys(ov) = mx ? max(keys(ov), key(x)) : min(keys(ov), key(x));
      L.helpers[i] = keys;
      f(ov) = reinterpret(ty, flip(keys(ov)));
      break;
    }
    case HL_P_ARGMAX:
    case HL_P_ARGMIN: {
      /* two reductions, no Tuple: the extreme value (NaN wins, as in NumPy), then the first
       * index that holds it */
      bool mx = n.prim == HL_P_ARGMAX;
      Type it = hl_compute_type(in.type.dtype);
      Func best("best" + std::to_string(i));
      best(ov) = fl ? cast(it, mx ? -INFINITY : INFINITY) : (mx ? it.min() : it.max());
      Expr bv = best(ov);
      best(ov) = fl ? select(hl_is_nan(bv) || hl_is_nan(x), bv + x, mx ? max(bv, x) : min(bv, x)) : (mx ? max(bv, x) : min(bv, x));
      L.helpers[i] = best;
      Expr b = best(ov);
      Expr hit = fl ? ((ordered(x, b) && x == b) || (hl_is_nan(x) && hl_is_nan(b))) : x == b;
      Expr none = cast(Int(64), Int(64).max());
      f(ov) = none;
      f(ov) = min(f(ov), select(hit, cast(Int(64), rd[0]), none));
      break;
    }
    }
  }

  /* extern stages' operands are parameters or materialised Funcs */
  ExternFuncArgument operand(int s) const {
    const hl_node &sn = node(s);
    return sn.prim == HL_P_PARAM ? ExternFuncArgument(L.params[sn.attrs.i[0]]) : ExternFuncArgument(L.funcs[s]);
  }

  /* an extern stage's operand as its buffer holds it: a float16/bfloat16 node computed in
   * float32 goes through a materialised copy of its bit patterns */
  ExternFuncArgument bits_operand(int s) {
    const hl_node &sn = node(s);
    if (!hl_dtype_is_half(sn.type.dtype) || sn.prim == HL_P_PARAM || L.funcs[s].is_extern() || hl_empty_on_cuda(g, s))
      return operand(s);
    Func bits("bits" + std::to_string(s));
    const std::vector<Var> &v = hl_vars(sn.type.ndim);
    bits(v) = hl_half_encode(L.funcs[s](v), sn.type.dtype);
    if (hl_graph_sized(g) && hl_shape_size(sn.type.ndim, sn.type.shape) > 0)
      for (int d = 0; d < sn.type.ndim; d++) bits.bound(v[d], 0, (int)sn.type.shape[sn.type.ndim - 1 - d]);
    L.staged.push_back(bits);
    return bits;
  }

  /* an operand of a host stage (LAPACK, sorting). In a CUDA pipeline a parameter may live only
   * in device memory, and Halide copies to the host only buffers it allocated itself: such
   * parameters are staged through a copy, a GPU stage whose buffer Halide brings to the host. */
  ExternFuncArgument host_operand(int s) const {
    const hl_node &sn = node(s);
    /* (an empty parameter is never read, and a staged copy of nothing would lose its buffer) */
    if (g->device != HL_DEVICE_CUDA || sn.prim != HL_P_PARAM || hl_shape_size(sn.type.ndim, sn.type.shape) == 0)
      return operand(s);
    Func staged("staged" + std::to_string(s));
    const std::vector<Var> &v = hl_vars(sn.type.ndim);
    staged(v) = L.params[sn.attrs.i[0]](v);
    if (hl_graph_sized(g))
      for (int d = 0; d < sn.type.ndim; d++) staged.bound(v[d], 0, (int)sn.type.shape[sn.type.ndim - 1 - d]);
    L.staged.push_back(staged);
    return staged;
  }

  /* one result of a compiled loop: an extern stage that runs the loop's driver (hl_loop.c) */
  void loop(int i) {
    const hl_node &n = node(i);
    std::vector<ExternFuncArgument> args = {Expr((int)n.attrs.i[0]), Expr((int)n.attrs.i[1])};
    /* a polymorphic program's loop sizes its inputs and results from the symbols (hl_poly.h) */
    if (g->sym)
      for (int j = 0; j < HL_MAX_SYMS; j++) args.push_back(j < g->sym->nsym ? symbol(j) : Expr(0));
    for (int k = 0; k < n.nin; k++) args.push_back(bits_operand(input(n, k)));
    DeviceAPI where = g->device == HL_DEVICE_CUDA ? DeviceAPI::CUDA : DeviceAPI::Host;   /* where the body runs */
    L.funcs[i].define_extern((g->sym ? "hl_stage_loop_sym_" : "hl_stage_loop_") + std::to_string(n.nin), args,
                             hl_halide_type(n.type.dtype), n.type.ndim, NameMangling::C, where);
  }

  /* LAPACK per matrix of the batch, as an extern stage on the host (hl_extern_linalg.cpp) */
  void linalg(int i) {
    const hl_node &n = node(i);
    if (n.prim == HL_P_QR || n.prim == HL_P_SVD || n.prim == HL_P_EIGH || n.prim == HL_P_SLOGDET) {
      /* the packed factors of each matrix (hl_linalg_layout.h) */
      int src = input(n, 0);
      int rs = node(src).type.ndim;
      int what = n.prim == HL_P_QR ? HL_DECOMP_QR : n.prim == HL_P_SVD ? HL_DECOMP_SVD : n.prim == HL_P_EIGH ? HL_DECOMP_EIGH : HL_DECOMP_SLOGDET;
      std::vector<ExternFuncArgument> args = {host_operand(src), Expr(what), Expr((int)n.attrs.i[0]),
                                              traced_extent(src, rs - 2), traced_extent(src, rs - 1)};
      L.funcs[i].define_extern("hl_stage_linalg_decomp", args, hl_halide_type(n.type.dtype), n.type.ndim, NameMangling::C,
                               DeviceAPI::Host);
      return;
    }
    Expr order = traced_extent(i, n.type.ndim - 2);
    std::vector<ExternFuncArgument> args;
    for (int k = 0; k < n.nin; k++) args.push_back(host_operand(input(n, k)));
    if (n.prim == HL_P_SOLVE_TRIANGULAR) args.push_back(Expr((int)n.attrs.i[0]));
    args.push_back(order);
    const char *fn = n.prim == HL_P_SOLVE ? "hl_stage_linalg_solve"
                     : n.prim == HL_P_SOLVE_TRIANGULAR ? "hl_stage_linalg_solve_triangular" : "hl_stage_linalg_cholesky";
    L.funcs[i].define_extern(fn, args, hl_halide_type(n.type.dtype), n.type.ndim, NameMangling::C, DeviceAPI::Host);
  }

  /* a stable sort of each lane, as an extern stage on the host (hl_extern_sort.cpp) */
  void sort(int i) {
    const hl_node &n = node(i);
    int ax = (int)n.attrs.i[0], src = input(n, 0);
    std::vector<ExternFuncArgument> args = {host_operand(src), Expr(n.type.ndim - 1 - ax), traced_extent(i, ax),
                                            Expr(n.prim == HL_P_ARGSORT ? 1 : 0)};
    L.funcs[i].define_extern("hl_stage_sort", args, hl_halide_type(n.type.dtype), n.type.ndim, NameMangling::C, DeviceAPI::Host);
  }

  /* a Fourier transform of each lane, as an extern stage: cuFFT on the device in a CUDA pipeline
   * where it can be loaded (hl_extern_cufft.cpp), else on the host (hl_extern_fft.cpp) */
  void fft(int i) {
    const hl_node &n = node(i);
    int ax = (int)n.attrs.i[0], src = input(n, 0);
    if (n.prim == HL_P_FFT_REAL_INVERSE) {   /* (the operand has the output's axes and the pairs') */
      std::vector<ExternFuncArgument> args = {host_operand(src), Expr(n.type.ndim - 1 - ax), attr(i, 1)};
      L.funcs[i].define_extern("hl_stage_fft_real_inverse", args, hl_halide_type(n.type.dtype), n.type.ndim, NameMangling::C,
                               DeviceAPI::Host);
      return;
    }
    /* (fft.real and fft.real_inverse, rfft's and irfft's, are host stages everywhere: no cuFFT R2C/C2R yet) */
    bool gpu = g->device == HL_DEVICE_CUDA && n.prim != HL_P_FFT_REAL && !hl_empty_on_cuda(g, i) && hl_cufft_available();
    std::vector<ExternFuncArgument> args = {gpu ? operand(src) : host_operand(src), Expr(n.type.ndim - 1 - ax),
                                            traced_extent(src, ax)};
    if (n.prim != HL_P_FFT_REAL) args.push_back(Expr(n.prim == HL_P_FFT_BACKWARD ? 1 : 0));
    const char *fn = gpu ? "hl_stage_cufft" : n.prim == HL_P_FFT_REAL ? "hl_stage_fft_real" : "hl_stage_fft";
    L.funcs[i].define_extern(fn, args, hl_halide_type(n.type.dtype), n.type.ndim, NameMangling::C,
                             gpu ? DeviceAPI::CUDA : DeviceAPI::Host);
  }

  /* a collective of hl.dist, as an extern stage on the host (hl_extern_dist.cpp) */
  void dist(int i) {
    const hl_node &n = node(i);
    int src = input(n, 0);
    const hl_type &t = node(src).type;
    /* (float16/bfloat16 as their bit patterns; in a CUDA pipeline a parameter staged to the host) */
    ExternFuncArgument x = hl_dtype_is_half(node(src).type.dtype) ? bits_operand(src) : host_operand(src);
    std::vector<ExternFuncArgument> args = {x, Expr(n.prim), Expr((int)n.attrs.i[0]), Expr((int)n.attrs.i[1]),
                                            Expr((int)n.attrs.i[2]), Expr((int)n.type.dtype)};
    for (int d = 0; d < HL_MAX_DIMS; d++) args.push_back(d < t.ndim ? traced_extent(src, t.ndim - 1 - d) : Expr(1));
    L.funcs[i].define_extern("hl_stage_dist", args, hl_halide_type(n.type.dtype), n.type.ndim, NameMangling::C, DeviceAPI::Host);
  }

  void matmul(int i) {
    const hl_node &n = node(i);
    int a = input(n, 0), b = input(n, 1), r = n.type.ndim;
    const std::vector<Var> &v = hl_vars(r);
    RDom k(0, extent(a, r - 1), "k" + std::to_string(i));
    L.rdoms[i] = k;
    std::vector<Expr> aa = args_of(r), ba = args_of(r);
    aa[0] = k;       /* A[..., m, k] */
    ba[1] = k;       /* B[..., k, n] */
    Type ty = hl_compute_type(n.type.dtype);
    bool half = hl_dtype_is_half(n.type.dtype);   /* the Halide product in float32, rounded */
    /* cuBLAS for plain matrix products; batched products in a jit pipeline take the Halide
     * schedule, since the batched extern call gave wrong gradients on an H100 (not yet found) */
    if (!half && g->device == HL_DEVICE_CUDA && hl_dtype_is_float(n.type.dtype) && hl_cublas_available() && (r == 2 || g->dynamic)) {
      /* cuBLAS as an extern stage. An empty contraction (K = 0) is all zeros, which the
       * extern leaves unwritten: the result selects zeros for it */
      Expr K = extent(a, r - 1);
      if (!g->dynamic) {
        if (node(a).type.shape[r - 1] > 0)
          L.funcs[i].define_extern("hl_stage_cublas_matmul", {operand(a), operand(b), K}, ty, r, NameMangling::C, DeviceAPI::CUDA);
        else
          L.funcs[i](v) = make_zero(ty);   /* K = 0, known: no stage at all */
        return;
      }
      Func ext("cublas" + std::to_string(i));
      ext.define_extern("hl_stage_cublas_matmul", {operand(a), operand(b), K}, ty, r, NameMangling::C, DeviceAPI::CUDA);
      L.helpers[i] = ext;
      L.funcs[i](v) = select(K > 0, ext(v), make_zero(ty));
      return;
    }
    if (hl_matmul_is_kernel(g, n.type.dtype, L.exporting)) {
      /* in a jit pipeline, the engine's cached matmul kernel as an extern stage: compiled once per
       * process rather than once per pipeline (most of a training step's compile time); the
       * autoscheduler gets the product as a Halide definition to schedule itself */
      L.funcs[i].define_extern("hl_stage_cpu_matmul", {operand(a), operand(b), extent(a, r - 1)}, ty, r,
                               NameMangling::C, DeviceAPI::Host);
      return;
    }
    Func prod("prod" + std::to_string(i));
    prod(v) = make_zero(ty);
    bool no_columns = !g->dynamic && !g->sym && n.type.shape[r - 1] == 0;   /* (nothing to clamp to) */
    if (g->device == HL_DEVICE_CPU && !g->schedule && !no_columns) {
      /* B's columns clamped: the schedule computes the product in whole vectors past the last
       * column (a 256x1024 by 1024x10 product ran its 10 columns in scalars, 24x NumPy's time),
       * and the packed panel's copies of the last column keep those reads inside B */
      Func panel("panel" + std::to_string(i));
      std::vector<Expr> pa(v.begin(), v.end());
      pa[0] = clamp(v[0], 0, extent(b, r - 1) - 1);
      panel(v) = call(b, pa);
      L.panels[i] = panel;
      prod(v) += call(a, aa) * panel(ba);
    } else {
      prod(v) += call(a, aa) * call(b, ba);
    }
    L.helpers[i] = prod;
    L.funcs[i](v) = fit(prod(v), n.type.dtype);
  }

  /* A reshape keeps the row-major order, so its output and input axes fall into groups whose
   * extents multiply to the same size (axes split or merged), and an input index needs only the
   * output indices of its own group: through one flat index over every axis, a tile (a reshape of
   * a broadcast) divided the vectorised index by the tile's extent. Such a gather can have all
   * its lanes at one address, and then Halide 14's FlattenNestedRamps divides by zero (fixed in
   * Halide 17): a jitted pad of a tile crashed the process. Static shapes only; false (the flat
   * index) where an extent is 0. */
  template <typename Num>
  static bool reshape_by_groups(const hl_type &out, const hl_type &in, const std::vector<Var> &v, Num num, bool wide,
                                std::vector<Expr> &ia) {
    int r = out.ndim, rin = in.ndim;
    for (int a = 0; a < r; a++)
      if (out.shape[a] <= 0) return false;
    for (int a = 0; a < rin; a++)
      if (in.shape[a] <= 0) return false;
    int a = r - 1, b = rin - 1;   /* the innermost axes not yet in a group */
    while (a >= 0 || b >= 0) {
      /* the next group: axes taken from whichever side has the smaller product, until equal */
      int a_end = a, b_end = b;
      int64_t po = 1, pi = 1;
      do {
        if (a >= 0 && (po <= pi || b < 0)) po *= out.shape[a--];
        else if (b >= 0) pi *= in.shape[b--];
        else return false;   /* (sizes that do not match: not a reshape) */
      } while (po != pi);
      Expr flat = num(0);
      for (int k = a + 1; k <= a_end; k++) flat = flat * num((int)out.shape[k]) + num(v[r - 1 - k]);
      Expr inner = num(1);
      for (int k = b_end; k > b; k--) {
        Expr c = is_const_one(inner) ? flat : flat / inner;
        if (k > b + 1) c = c % num((int)in.shape[k]);   /* (the group's outermost axis needs no bound) */
        ia[rin - 1 - k] = wide ? cast(Int(32), c) : c;
        inner = inner * num((int)in.shape[k]);
      }
    }
    return true;
  }

  void view(int i) {
    const hl_node &n = node(i);
    int src = input(n, 0);
    const hl_node &in = node(src);
    int r = n.type.ndim, rin = in.type.ndim;
    const std::vector<Var> &v = hl_vars(r);
    std::vector<Expr> ia(rin);
    switch (n.prim) {
    case HL_P_BROADCAST:
      for (int a = 0; a < rin; a++) {
        int oa = a + r - rin;
        ia[rin - 1 - a] = in.type.shape[a] == 1 && n.type.shape[oa] != 1 ? Expr(0) : Expr(v[r - 1 - oa]);
      }
      break;
    case HL_P_TRANSPOSE:
      for (int a = 0; a < r; a++) ia[rin - 1 - (int)n.attrs.i[a]] = v[r - 1 - a];
      break;
    case HL_P_SLICE:
      for (int a = 0; a < r; a++)
        ia[rin - 1 - a] = attr(i, a) + attr(i, HL_MAX_DIMS + a) * Expr(v[r - 1 - a]);
      break;
    case HL_P_RESHAPE: {
      /* a unit axis appended (how the complex rewrite pairs real values with zeros, hl_complex.c):
       * the same indices, which hold for any shape. The flat index below bakes in the traced
       * extents, wrong for a shape-generic eager kernel run on another shape. */
      bool unit_appended = r == rin + 1 && n.type.shape[rin] == 1;
      for (int a = 0; unit_appended && a < rin; a++) unit_appended = n.type.shape[a] == in.type.shape[a];
      if (unit_appended) {
        for (int a = 0; a < rin; a++) ia[a] = v[a + 1];
        break;
      }
      /* through the flat row-major index, in 64-bit arithmetic once it can pass 2^31 (a
       * polymorphic program's reshapes are checked to stay below when it runs: hl_sym_bind) */
      bool wide = hl_graph_sized(g) && hl_shape_size(r, n.type.shape) > INT32_MAX;
      auto num = [&](Expr x) { return wide ? cast(Int(64), x) : x; };
      if (!g->sym && reshape_by_groups(n.type, in.type, v, num, wide, ia)) break;
      Expr flat = num(0);
      for (int a = 0; a < r; a++) flat = flat * num(traced_extent(i, a)) + num(v[r - 1 - a]);
      Expr inner = num(1);
      bool unit = true;
      for (int a = rin - 1; a >= 0; a--) {
        Expr c = unit ? flat : flat / inner;
        c = a == 0 ? c : c % num(traced_extent(src, a));
        ia[rin - 1 - a] = wide ? cast(Int(32), c) : c;   /* each axis itself is below 2^31 */
        inner = inner * num(traced_extent(src, a));
        unit = unit && in.type.shape[a] == 1 && !(g->sym && hl_sym_find(g->sym, src, HL_SYM_SHAPE, a));
      }
      break;
    }
    }
    L.funcs[i](v) = call(src, ia);
  }

  void concat(int i) {
    const hl_node &n = node(i);
    int r = n.type.ndim, ax = (int)n.attrs.i[0], hd = r - 1 - ax;
    const std::vector<Var> &v = hl_vars(r);
    std::vector<Expr> args = args_of(r);
    Expr e;
    Expr end = 0;
    std::vector<std::pair<Expr, Expr>> pieces;
    for (int k = 0; k < n.nin; k++) {
      int s = input(n, k);
      if (node(s).type.shape[ax] == 0) continue;   /* (a polymorphic program's sizes are never 0 where traced) */
      Expr len = traced_extent(s, ax);
      std::vector<Expr> a = args;
      /* clamped so that every branch of the select reads in bounds */
      a[hd] = clamp(Expr(v[hd]) - end, 0, max(len - 1, 0));
      end = end + len;
      pieces.push_back({Expr(v[hd]) < end, call(s, a)});
    }
    e = pieces.empty() ? make_zero(hl_compute_type(n.type.dtype)) : pieces.back().second;
    for (int k = (int)pieces.size() - 2; k >= 0; k--) e = select(pieces[k].first, pieces[k].second, e);
    L.funcs[i](v) = e;
  }

  /* gather: out[pre..., j..., post...] = x[pre..., idx[j...], post...], 0 where the index is
   * outside 0..n-1 (the read itself is clamped in bounds). scatter_add: zeros, then each value
   * added at its index along the axis, in the order of the index array (an RDom over it). */
  void indexed(int i) {
    const hl_node &n = node(i);
    int src = input(n, 0), ids = input(n, 1), ax = (int)n.attrs.i[0];
    const hl_node &x = node(src), &ix = node(ids);
    int rx = x.type.ndim, ri = ix.type.ndim, r = n.type.ndim;
    Type ty = hl_compute_type(n.type.dtype);   /* a float16 scatter_add sums in float32, rounded where read (call) */
    /* index arithmetic in 32 bits unless the indices are int64 (a uint8 index compared with an
     * extent of 300 must not wrap) */
    Type it = ix.type.dtype == HL_INT64 ? Int(64) : Int(32);
    const std::vector<Var> &v = hl_vars(r);
    /* numpy axis a of the result is Halide dim r - 1 - a */
    auto out_var = [&](int a) { return Expr(v[r - 1 - a]); };
    if (n.prim == HL_P_GATHER) {
      std::vector<Expr> iargs(ri), xargs(rx);
      for (int d = 0; d < ri; d++) iargs[ri - 1 - d] = out_var(ax + d);
      Expr raw = cast(it, call(ids, iargs));
      Expr extent_ax = extent(src, ax);
      Expr hi = cast(it, extent_ax) - make_one(it);
      Expr valid = raw >= make_zero(it) && raw <= hi;
      Expr at = cast(Int(32), clamp(raw, make_zero(it), max(hi, make_zero(it))));
      for (int d = 0; d < ax; d++) xargs[rx - 1 - d] = out_var(d);
      xargs[rx - 1 - ax] = at;
      for (int d = ax + 1; d < rx; d++) xargs[rx - 1 - d] = out_var(d + ri - 1);
      L.funcs[i](v) = select(valid, call(src, xargs), make_zero(ty));
      return;
    }
    /* scatter_add and scatter: pure dims of the result except the axis; the RDom spans the index
     * array. scatter_add starts from zeros and adds; scatter starts from its operand and
     * combines by its mode. A dropped index (outside 0..n-1) writes back what its (clamped)
     * target holds. */
    bool based = n.prim == HL_P_SCATTER;
    int mode = based ? (int)n.attrs.i[2] : HL_SCATTER_ADD;
    if (based) {
      src = input(n, 1);
      ids = input(n, 2);
    }
    const hl_node &ux = node(src), &jx = node(ids);
    rx = ux.type.ndim;
    ri = jx.type.ndim;
    it = jx.type.dtype == HL_INT64 ? Int(64) : Int(32);
    Expr extent_n = attr(i, 1);
    Func &f = L.funcs[i];
    f(v) = based ? call(input(n, 0), args_of(r)) : make_zero(ty);
    std::vector<Expr> iargs(ri), xargs(rx), oargs = args_of(r);
    Region ranges;   /* index axes, innermost first */
    for (int d = ri - 1; d >= 0; d--) ranges.push_back(Range(0, extent(ids, d)));
    RDom rd;
    if (ri > 0) {
      rd = RDom(ranges, "s" + std::to_string(i));
      L.rdoms[i] = rd;
    }
    for (int d = 0; d < ri; d++) iargs[ri - 1 - d] = rd[ri - 1 - d];
    Expr raw = cast(it, call(ids, iargs));
    Expr valid = raw >= make_zero(it) && raw < cast(it, extent_n);
    oargs[r - 1 - ax] = cast(Int(32), clamp(raw, make_zero(it), cast(it, max(extent_n - 1, 0))));
    for (int d = 0; d < ax; d++) xargs[rx - 1 - d] = out_var(d);
    for (int d = 0; d < ri; d++) xargs[rx - 1 - (ax + d)] = rd[ri - 1 - d];
    for (int d = ax + ri; d < rx; d++) xargs[rx - 1 - d] = out_var(d - ri + 1);
    Expr u = call(src, xargs);
    if (mode == HL_SCATTER_ADD) {
      f(oargs) += select(valid, u, make_zero(ty));
      return;
    }
    Expr old = f(oargs), now;
    hl_dtype t = n.type.dtype;
    switch (mode) {
    case HL_SCATTER_SET: now = u; break;
    case HL_SCATTER_MUL: now = binary(HL_P_MUL, old, u, t); break;
    case HL_SCATTER_MIN: now = binary(HL_P_MINIMUM, old, u, t); break;
    default: now = binary(HL_P_MAXIMUM, old, u, t); break;
    }
    f(oargs) = select(valid, fit(now, t), old);
  }

  void source(int i) {
    const hl_node &n = node(i);
    int r = n.type.ndim;
    Type ty = hl_compute_type(n.type.dtype);
    const std::vector<Var> &v = hl_vars(r);
    switch (n.prim) {
    case HL_P_PARAM: {
      ImageParam &p = L.params[n.attrs.i[0]];
      p = ImageParam(hl_halide_type(n.type.dtype), r, "in" + std::to_string(n.attrs.i[0]));
      int stride_class = g->dynamic ? (int)n.attrs.i[1] : 0;
      if (r > 0) {
        if (stride_class == 1) p.dim(0).set_stride(0);
        else if (stride_class == 2) p.dim(0).set_stride(Expr());
      }
      declare_bounds(g, p, n.type);
      L.funcs[i](v) = p(v);
      break;
    }
    case HL_P_CONST:
      /* 2-byte floats: the bits come from the host's conversion, not from float arithmetic on the
       * constant in the pipeline, which fast-math folds to garbage for inf and NaN */
      if (hl_dtype_is_half(n.type.dtype))
        constants[i] = hl_half_decode(Internal::make_const(UInt(16), (uint64_t)hl_half_from_double(n.type.dtype, n.attrs.f)), n.type.dtype);
      else if (const hl_sym_slot *sl = hl_sym_find(g->sym, i, HL_SYM_VALUE, 0)) {
        /* a polymorphic program's constant that follows the sizes (mean's divisor) */
        Expr e = Expr(sl->fc);
        for (int j = 0; j < g->sym->nsym; j++)
          if (sl->fa[j] != 0) e = e + Expr(sl->fa[j]) * cast(Float(64), symbol(j));
        constants[i] = n.type.dtype == HL_BOOL ? cast(ty, e != 0) : fit(cast(ty, e), n.type.dtype);
      } else
        constants[i] = n.type.dtype == HL_BOOL ? cast(ty, n.attrs.f != 0) : fit(cast(ty, Expr(n.attrs.f)), n.type.dtype);
      L.funcs[i](v) = constants[i];
      break;
    case HL_P_IOTA:
      L.funcs[i](v) = fit(cast(hl_dtype_is_half(n.type.dtype) ? Int(32) : ty, v[r - 1 - (int)n.attrs.i[0]]), n.type.dtype);
      break;
    }
  }
};

}  // namespace

bool hl_matmul_is_kernel(const hl_graph *g, hl_dtype dt, bool exporting) {
  return !hl_dtype_is_half(dt) && g->device == HL_DEVICE_CPU && !g->dynamic && !g->schedule && !exporting &&
         !getenv("HALUA_FUSED_MATMUL");
}

namespace {

/* the primitives lowered through hl_vmath.cpp's fast-math polynomials (float32 and the 2-byte
 * floats; float64 calls libm, where leaving the call fast changes nothing) */
bool vmath_prim(int prim) {
  switch (prim) {
  case HL_P_EXP: case HL_P_EXPM1: case HL_P_LOG: case HL_P_LOG1P: case HL_P_SIN: case HL_P_COS:
  case HL_P_TAN: case HL_P_ASIN: case HL_P_ACOS: case HL_P_ATAN: case HL_P_SINH: case HL_P_COSH:
  case HL_P_TANH: case HL_P_ERF: case HL_P_POW: case HL_P_ATAN2:
    return true;
  default:
    return false;
  }
}

/* every float expression of a definition that is not part of a larger float expression, as one
 * strict_float call: the values, and the float operands of comparisons, casts and selects of
 * other types (Halide's StrictifyFloat then makes every float subexpression within each call
 * strict, at the start of lowering). Operands too: argmin's two reductions both compute their
 * input, inlined, and compare the results for equality; a float operand of that comparison
 * left fast-math came out in other bits than the strict one, and no index matched */
class StrictValues : public Internal::IRMutator {
public:
  using Internal::IRMutator::mutate;
  Expr mutate(const Expr &e) override {
    if (!e.defined()) return e;
    if (e.type().is_float()) return strict_float(e);
    return Internal::IRMutator::mutate(e);
  }
};

}  // namespace

void hl_lower_ieee(hl_lowered &L) {
  const hl_graph *g = L.g;
  if (g->device != HL_DEVICE_CPU || g->dynamic) return;
  std::set<std::string> fast;
  for (int i = 0; i < g->nnodes; i++) {
    if (vmath_prim(g->nodes[i].prim)) fast.insert(L.funcs[i].name());
    /* a product Halide computes itself (2-byte floats, the autoscheduler's, an exported
     * library's): its sums need LLVM's contraction into fused multiply-adds, as the engine's own
     * matmul kernel has them; the node's value reads it strictly */
    if (g->nodes[i].prim == HL_P_MATMUL && L.helpers[i].defined()) fast.insert(L.helpers[i].name());
  }
  std::map<std::string, Internal::Function> env;
  for (const Func &out : L.outputs) {
    std::map<std::string, Internal::Function> calls = Internal::find_transitive_calls(out.function());
    env.insert(calls.begin(), calls.end());
  }
  StrictValues strict;
  for (auto &kv : env)
    if (!fast.count(kv.first) && !kv.second.has_extern_definition()) kv.second.mutate(&strict);
}

bool hl_empty_on_cuda(const hl_graph *g, int i) {
  const hl_node &n = g->nodes[i];
  return g->device == HL_DEVICE_CUDA && !g->dynamic && n.prim != HL_P_PARAM && hl_shape_size(n.type.ndim, n.type.shape) == 0;
}

/* a 2-D transpose of a parameter as a pipeline output (CPU pipelines this engine schedules) */
static bool transposed_parameter(const hl_graph *g, int i) {
  const hl_node &n = g->nodes[i];
  if (g->device != HL_DEVICE_CPU || g->dynamic || g->schedule || n.prim != HL_P_TRANSPOSE || n.type.ndim != 2) return false;
  /* (axes {1, 0}: a transpose by {0, 1} is the identity) */
  return n.attrs.i[0] == 1 && n.attrs.i[1] == 0 && g->nodes[hl_node_inputs(g, &n)[0]].prim == HL_P_PARAM;
}

Pipeline hl_pipeline(hl_lowered &L, std::vector<Argument> &args) {
  hl_lower_ieee(L);
  for (const ImageParam &p : L.params) args.push_back(p);
  Pipeline p(L.outputs);
  hl_add_codegen_mends(p);
  return p;
}

void hl_lower_graph(const hl_graph *g, hl_lowered &L) {
  L.g = g;
  L.funcs.clear();
  for (int i = 0; i < g->nnodes; i++) L.funcs.emplace_back(Func("n" + std::to_string(i)));
  L.helpers.assign(g->nnodes, Func());
  L.panels.assign(g->nnodes, Func());
  L.rdoms.assign(g->nnodes, RDom());
  L.consumers.assign(g->nnodes, 0);
  L.params.assign(g->nparams, ImageParam());
  L.staged.clear();
  L.totals.clear();
  Lowerer lw{g, L, std::vector<Expr>(g->nnodes)};
  for (int i = 0; i < g->nnodes; i++) {
    const hl_node &n = g->nodes[i];
    for (int k = 0; k < n.nin; k++) L.consumers[hl_node_inputs(g, &n)[k]]++;
    if (hl_empty_on_cuda(g, i)) {
      /* nothing to compute: Halide's CUDA runtime aborts the process on a device allocation of
       * no bytes, so an empty value is a constant, never a GPU stage (hl_schedule_cuda) */
      L.funcs[i](hl_vars(n.type.ndim)) = make_zero(hl_compute_type(n.type.dtype));
      continue;
    }
    switch (hl_prims[n.prim].kind) {
    case HL_K_SOURCE: lw.source(i); break;
    case HL_K_ELEMWISE: lw.elemwise(i); break;
    case HL_K_REDUCE: lw.reduce(i); break;
    case HL_K_MATMUL: lw.matmul(i); break;
    case HL_K_VIEW: lw.view(i); break;
    case HL_K_CONCAT: lw.concat(i); break;
    case HL_K_LOOP: lw.loop(i); break;
    case HL_K_LINALG: lw.linalg(i); break;
    case HL_K_SORT: lw.sort(i); break;
    case HL_K_DIST: lw.dist(i); break;
    case HL_K_FFT: lw.fft(i); break;
    case HL_K_INDEXED: lw.indexed(i); break;
    }
    if (g->sym) {
      Expr total = cast(Int(64), 1);
      for (int a = 0; a < n.type.ndim; a++) total = total * cast(Int(64), lw.extent(i, a));
      L.totals.push_back(total);
    }
  }
  /* Outputs are their own Funcs: a parameter or a node used twice still gets a buffer. */
  L.outputs.clear();
  for (int k = 0; k < g->noutputs; k++) {
    int i = g->outputs[k];
    int r = g->nodes[i].type.ndim;
    Func out("out" + std::to_string(k));
    if (transposed_parameter(g, i)) {
      /* in-register shuffles in cache blocks (hl_transpose.c): a Halide schedule reads each
       * output vector as a strided gather */
      int p = (int)g->nodes[hl_node_inputs(g, &g->nodes[i])[0]].attrs.i[0];
      out.define_extern("hl_stage_cpu_transpose", {L.params[p]}, hl_halide_type(g->nodes[i].type.dtype), 2,
                        NameMangling::C, DeviceAPI::Host);
      L.outputs.push_back(out);
      continue;
    }
    Expr e = L.funcs[i](hl_vars(r));
    hl_dtype t = g->nodes[i].type.dtype;
    if (hl_dtype_is_half(t) && e.type() != UInt(16)) e = hl_half_encode(e, t);
    out(hl_vars(r)) = e;
    declare_bounds(g, out.output_buffer(), g->nodes[i].type);   /* (as the parameters') */
    L.outputs.push_back(out);
  }
}
