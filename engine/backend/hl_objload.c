/* Relocatable objects loaded without a linker (hl_objload.h). */
#define _GNU_SOURCE
#include "hl_objload.h"
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "hl_objload.c loads x86-64 objects: the host's"
#endif

#ifndef SHT_X86_64_UNWIND
#define SHT_X86_64_UNWIND 0x70000001   /* .eh_frame as LLVM types it */
#endif

typedef struct {
  char *name;
  uintptr_t addr;
  size_t size;
  int weak, type;   /* (its binding is weak; its ELF type) */
} sym_def;

struct hl_objimage {
  unsigned char *base;
  size_t size;
  sym_def *defs;   /* the objects' global symbols, for hl_objload_symbol */
  size_t ndefs;
  sym_def *funcs;   /* every function with a size, local ones too: for hl_objload_perf_map */
  size_t nfuncs;
};

/* the three areas of the mapping, each starting on a page: code (and the jumps of calls out),
 * constants (and the stored addresses of calls out), data */
enum { AREA_CODE, AREA_CONST, AREA_DATA, NAREAS };
enum { INTERNAL, EXTERNAL, MISSING };

/* one object while it loads */
typedef struct {
  const unsigned char *b;
  size_t size;
  const Elf64_Shdr *sh;
  size_t nsec;
  size_t *sec_off;              /* each section's offset in its area */
  signed char *sec_area;        /* its area, or -1: not loaded */
  unsigned char *discarded;     /* a member of a COMDAT group an earlier object loaded */
  const Elf64_Sym *syms;
  size_t nsyms;
  size_t symtab;                /* the symbol table's section */
  const char *strtab;
  size_t strsz;
  uintptr_t *addr;              /* each symbol's address, once resolved */
  unsigned char *external;      /* EXTERNAL: resolved outside the image (a call may need a jump
                                 * slot); MISSING: nowhere in the process */
  long *slot;                   /* its slot in the image, or -1 */
} obj;

typedef struct {
  obj *objs;
  size_t n;
  size_t area_size[NAREAS];
  size_t area_base[NAREAS];     /* offsets in the mapping */
  size_t slots, slots_used;     /* slots reserved (one per symbol at most) and taken */
  size_t stub_off, slot_off;    /* the jumps (code area) and the addresses (constants area) */
  unsigned char *map;
  size_t map_size;
  sym_def *defs;
  size_t ndefs, defs_cap;
  sym_def *funcs;
  size_t nfuncs, funcs_cap;
  const hl_objimage *scope;   /* searched after the image, before the process */
  char *why;
  size_t cap;
} loader;

static int fail(loader *ld, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (ld->why && ld->cap) vsnprintf(ld->why, ld->cap, fmt, ap);
  va_end(ap);
  return -1;
}

static size_t align_up(size_t v, size_t a) { return a > 1 ? (v + a - 1) / a * a : v; }

static const char *sec_name(const obj *o, size_t i, const char *shstr, size_t shstrsz) {
  size_t n = o->sh[i].sh_name;
  return shstr && n < shstrsz ? shstr + n : "";
}

static const char *sym_name(const obj *o, const Elf64_Sym *s) {
  return s->st_name < o->strsz ? o->strtab + s->st_name : "";
}

/* a section's bytes lie inside the object */
static int in_bounds(const obj *o, const Elf64_Shdr *s) {
  return s->sh_type == SHT_NOBITS || (s->sh_offset <= o->size && s->sh_size <= o->size - s->sh_offset);
}

static int parse(loader *ld, obj *o, size_t index) {
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)o->b;
  if ((uintptr_t)o->b % 8) return fail(ld, "object %zu is not aligned to 8 bytes in memory", index);   /* (its tables are read in place) */
  if (o->size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
    return fail(ld, "object %zu is not an ELF file", index);
  if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_machine != EM_X86_64 ||
      eh->e_type != ET_REL)
    return fail(ld, "object %zu is not a relocatable x86-64 object", index);
  if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > o->size || (uintptr_t)eh->e_shoff % 8)
    return fail(ld, "object %zu has a malformed section table", index);
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(o->b + eh->e_shoff);
  size_t nsec = eh->e_shnum;
  if (nsec == 0 && eh->e_shoff + sizeof *sh <= o->size) nsec = sh[0].sh_size;   /* (extended numbering) */
  if (nsec == 0 || nsec > (o->size - eh->e_shoff) / sizeof *sh)
    return fail(ld, "object %zu has a malformed section table", index);
  o->sh = sh;
  o->nsec = nsec;
  size_t shstrndx = eh->e_shstrndx == SHN_XINDEX ? sh[0].sh_link : eh->e_shstrndx;
  const char *shstr = NULL;
  size_t shstrsz = 0;
  if (shstrndx < nsec && sh[shstrndx].sh_type == SHT_STRTAB && in_bounds(o, &sh[shstrndx]) && sh[shstrndx].sh_size &&
      o->b[sh[shstrndx].sh_offset + sh[shstrndx].sh_size - 1] == '\0') {
    shstr = (const char *)o->b + sh[shstrndx].sh_offset;
    shstrsz = sh[shstrndx].sh_size;
  }
  o->sec_off = calloc(nsec, sizeof *o->sec_off);
  o->sec_area = malloc(nsec);
  o->discarded = calloc(nsec, 1);
  if (!o->sec_off || !o->sec_area || !o->discarded) return fail(ld, "out of memory");
  memset(o->sec_area, -1, nsec);
  o->symtab = 0;
  for (size_t i = 1; i < nsec; i++) {
    const Elf64_Shdr *s = &sh[i];
    if (!in_bounds(o, s)) return fail(ld, "object %zu: section %zu lies outside the file", index, i);
    if (s->sh_type == SHT_SYMTAB) {
      if (o->symtab) return fail(ld, "object %zu has two symbol tables", index);
      if (s->sh_entsize != sizeof(Elf64_Sym) || s->sh_link >= nsec || sh[s->sh_link].sh_type != SHT_STRTAB ||
          !in_bounds(o, &sh[s->sh_link]) || s->sh_offset % 8)
        return fail(ld, "object %zu has a malformed symbol table", index);
      o->symtab = i;
      o->syms = (const Elf64_Sym *)(o->b + s->sh_offset);
      o->nsyms = s->sh_size / sizeof(Elf64_Sym);
      o->strtab = (const char *)o->b + sh[s->sh_link].sh_offset;
      o->strsz = sh[s->sh_link].sh_size;
      if (o->strsz == 0 || o->strtab[o->strsz - 1] != '\0')
        return fail(ld, "object %zu has a malformed string table", index);
    }
    if (s->sh_type == SHT_REL) return fail(ld, "object %zu has relocations without addends (SHT_REL)", index);
    if (s->sh_type == SHT_SYMTAB_SHNDX) return fail(ld, "object %zu has more sections than the loader handles", index);
  }
  if (!o->symtab) return fail(ld, "object %zu has no symbol table", index);
  o->addr = calloc(o->nsyms ? o->nsyms : 1, sizeof *o->addr);
  o->external = calloc(o->nsyms ? o->nsyms : 1, 1);
  o->slot = malloc((o->nsyms ? o->nsyms : 1) * sizeof *o->slot);
  if (!o->addr || !o->external || !o->slot) return fail(ld, "out of memory");
  for (size_t i = 0; i < o->nsyms; i++) o->slot[i] = -1;
  ld->slots += o->nsyms;

  /* COMDAT groups: the first object that has a group's signature loads its members */
  for (size_t i = 1; i < nsec; i++) {
    const Elf64_Shdr *s = &sh[i];
    if (s->sh_type != SHT_GROUP) continue;
    if (s->sh_link != o->symtab || s->sh_info >= o->nsyms || s->sh_size < 4 || s->sh_size % 4 || s->sh_offset % 4)
      return fail(ld, "object %zu has a malformed section group", index);
    const uint32_t *w = (const uint32_t *)(o->b + s->sh_offset);
    if (!(w[0] & GRP_COMDAT)) continue;
    const char *sig = sym_name(o, &o->syms[s->sh_info]);
    int seen = 0;
    for (size_t e = 0; e < index && !seen; e++) {
      const obj *p = &ld->objs[e];
      for (size_t j = 1; j < p->nsec && !seen; j++) {
        if (p->sh[j].sh_type != SHT_GROUP || p->sh[j].sh_size < 4) continue;
        const uint32_t *pw = (const uint32_t *)(p->b + p->sh[j].sh_offset);
        seen = (pw[0] & GRP_COMDAT) && strcmp(sym_name(p, &p->syms[p->sh[j].sh_info]), sig) == 0;
      }
    }
    if (!seen) continue;
    for (size_t k = 1; k < s->sh_size / 4; k++) {
      if (w[k] >= nsec) return fail(ld, "object %zu has a malformed section group", index);
      o->discarded[w[k]] = 1;
    }
  }

  /* the sections that load, each placed in its area */
  for (size_t i = 1; i < nsec; i++) {
    const Elf64_Shdr *s = &sh[i];
    if (!(s->sh_flags & SHF_ALLOC) || o->discarded[i]) continue;
    const char *name = sec_name(o, i, shstr, shstrsz);
    if (s->sh_flags & SHF_TLS) return fail(ld, "object %zu has thread-local data (%s)", index, name);
    if (s->sh_type == SHT_FINI_ARRAY || strcmp(name, ".dtors") == 0) continue;   /* (destructors are not run) */
    if (s->sh_type == SHT_INIT_ARRAY || s->sh_type == SHT_PREINIT_ARRAY || strcmp(name, ".ctors") == 0) {
      if (s->sh_size) return fail(ld, "object %zu has constructors (%s)", index, name);
      continue;
    }
    /* (unwinding tables and notes: nothing in the process reads them) */
    if (s->sh_type == SHT_X86_64_UNWIND || s->sh_type == SHT_NOTE || strcmp(name, ".eh_frame") == 0) continue;
    if (s->sh_type != SHT_PROGBITS && s->sh_type != SHT_NOBITS)
      return fail(ld, "object %zu: section %s of type %u", index, name, (unsigned)s->sh_type);
    if (s->sh_size == 0) continue;
    int area = (s->sh_flags & SHF_EXECINSTR) ? AREA_CODE : (s->sh_flags & SHF_WRITE) ? AREA_DATA : AREA_CONST;
    size_t align = s->sh_addralign ? s->sh_addralign : 1;
    if (align & (align - 1) || align > 4096) return fail(ld, "object %zu: section %s aligned to %zu", index, name, align);
    size_t off = align_up(ld->area_size[area], align);
    if (off > ((size_t)1 << 30) || s->sh_size > ((size_t)1 << 30)) return fail(ld, "object %zu is too large", index);
    o->sec_area[i] = (signed char)area;
    o->sec_off[i] = off;
    ld->area_size[area] = off + s->sh_size;
  }
  return 0;
}

static uintptr_t sec_addr(const loader *ld, const obj *o, size_t i) {
  return (uintptr_t)ld->map + ld->area_base[(int)o->sec_area[i]] + o->sec_off[i];
}

/* The library this loader is part of (the engine's), opened again for dlsym: NULL where it is the
 * program itself (objload_test), which RTLD_DEFAULT searches first anyway. */
static void *own_library;
static void find_own_library(void) {
  Dl_info self;
  if (dladdr((const void *)&find_own_library, &self) && self.dli_fname)
    own_library = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
}

/* A name the image calls out to, in the process: first in the engine library and what it links
 * (its extern stages, libm), then anywhere. The engine binds its own calls to its own functions
 * (-Bsymbolic-functions, CMakeLists.txt), so a pipeline's calls into it must reach the same copy:
 * where a process holds two (a host's libhalua and Lua's halua_core), RTLD_DEFAULT alone would
 * give the first loaded, whose state (the run's record, its error text) the caller never reads. */
static void *process_symbol(const char *name) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, find_own_library);
  void *p = own_library ? dlsym(own_library, name) : NULL;
  return p ? p : dlsym(RTLD_DEFAULT, name);
}

static const sym_def *find_def(const sym_def *defs, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(defs[i].name, name) == 0) return &defs[i];
  return NULL;
}

/* a new entry at the end of a growing list (the definitions, or the functions), with a copy of
 * name; NULL when out of memory */
static sym_def *push(sym_def **list, size_t *n, size_t *cap, const char *name, uintptr_t addr) {
  if (*n == *cap) {
    size_t grown_cap = *cap ? *cap * 2 : 16;
    sym_def *grown = realloc(*list, grown_cap * sizeof *grown);
    if (!grown) return NULL;
    *list = grown;
    *cap = grown_cap;
  }
  sym_def *d = &(*list)[*n];
  memset(d, 0, sizeof *d);
  d->name = strdup(name);
  if (!d->name) return NULL;
  d->addr = addr;
  ++*n;
  return d;
}

/* the objects' global definitions, then every symbol's address */
static int resolve(loader *ld) {
  for (size_t e = 0; e < ld->n; e++) {
    obj *o = &ld->objs[e];
    for (size_t i = 1; i < o->nsyms; i++) {
      const Elf64_Sym *s = &o->syms[i];
      int bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
      if (s->st_shndx == SHN_UNDEF || type == STT_FILE) continue;
      if (s->st_shndx == SHN_COMMON) return fail(ld, "object %zu has a common symbol (%s)", e, sym_name(o, s));
      if (s->st_shndx == SHN_XINDEX) return fail(ld, "object %zu has more sections than the loader handles", e);
      if (s->st_shndx == SHN_ABS) {
        o->addr[i] = (uintptr_t)s->st_value;
      } else if (s->st_shndx >= o->nsec) {
        return fail(ld, "object %zu: symbol %s in no section", e, sym_name(o, s));
      } else if (o->discarded[s->st_shndx]) {
        continue;   /* (a COMDAT member another object loaded: resolved by name below) */
      } else if (o->sec_area[s->st_shndx] >= 0) {
        if (s->st_value > o->sh[s->st_shndx].sh_size) return fail(ld, "object %zu: symbol %s past its section", e, sym_name(o, s));
        o->addr[i] = sec_addr(ld, o, s->st_shndx) + (uintptr_t)s->st_value;
        if (type == STT_FUNC && s->st_size) {
          sym_def *f = push(&ld->funcs, &ld->nfuncs, &ld->funcs_cap, sym_name(o, s), o->addr[i]);
          if (!f) return fail(ld, "out of memory");
          f->size = s->st_size;
        }
      } else {
        continue;   /* (in a section that does not load: nothing loaded may refer to it) */
      }
      if ((bind != STB_GLOBAL && bind != STB_WEAK) || type == STT_SECTION) continue;
      const char *name = sym_name(o, s);
      sym_def *d = (sym_def *)find_def(ld->defs, ld->ndefs, name);
      if (d) {
        /* as a linker: a strong definition takes the place of a weak one; two strong ones clash */
        if (bind == STB_GLOBAL && !d->weak) return fail(ld, "%s is defined twice", name);
        if (bind == STB_GLOBAL) {
          d->addr = o->addr[i];
          d->weak = 0;
          d->type = type;
        }
        continue;
      }
      sym_def *def = push(&ld->defs, &ld->ndefs, &ld->defs_cap, name, o->addr[i]);
      if (!def) return fail(ld, "out of memory");
      def->weak = bind == STB_WEAK;
      def->type = type;
    }
  }
  for (size_t e = 0; e < ld->n; e++) {
    obj *o = &ld->objs[e];
    for (size_t i = 1; i < o->nsyms; i++) {
      const Elf64_Sym *s = &o->syms[i];
      int bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
      if ((bind != STB_GLOBAL && bind != STB_WEAK) || type == STT_FILE || type == STT_SECTION) continue;
      /* every reference to a global name goes to the definition that stands, the object's own too */
      const char *name = sym_name(o, s);
      const sym_def *d = find_def(ld->defs, ld->ndefs, name);
      if (d) {
        o->addr[i] = d->addr;
        continue;
      }
      int undefined = s->st_shndx == SHN_UNDEF || (s->st_shndx < o->nsec && o->discarded[s->st_shndx]);
      if (!undefined) continue;
      /* the scope's definition, else the process's */
      d = ld->scope ? find_def(ld->scope->defs, ld->scope->ndefs, name) : NULL;
      void *p = d ? (void *)d->addr : *name ? process_symbol(name) : NULL;
      o->addr[i] = (uintptr_t)p;
      /* (a missing one fails the load where a relocation uses it: assemblers list some unused) */
      o->external[i] = p || bind == STB_WEAK ? EXTERNAL : MISSING;
    }
  }
  return 0;
}

/* slot k: its stored address (constants area) and the jump through it (code area) */
static unsigned char *slot_address(const loader *ld, size_t k) {
  return ld->map + ld->area_base[AREA_CONST] + ld->slot_off + 8 * k;
}
static unsigned char *slot_jump(const loader *ld, size_t k) {
  return ld->map + ld->area_base[AREA_CODE] + ld->stub_off + 8 * k;
}

/* the slot of symbol i of o, filled on first use: its index */
static size_t slot_of(loader *ld, obj *o, size_t i) {
  if (o->slot[i] >= 0) return (size_t)o->slot[i];
  size_t k = ld->slots_used++;   /* (at most one per symbol: reserved in parse) */
  unsigned char *slot = slot_address(ld, k), *stub = slot_jump(ld, k);
  memcpy(slot, &o->addr[i], 8);
  int32_t disp = (int32_t)((intptr_t)slot - (intptr_t)(stub + 6));   /* (one mapping: within 2 GB) */
  stub[0] = 0xff;   /* jmp *disp(%rip) */
  stub[1] = 0x25;
  memcpy(stub + 2, &disp, 4);
  stub[6] = stub[7] = 0xcc;
  o->slot[i] = (long)k;
  return k;
}

/* whether symbol i of o is a function (a target a jump can stand in for): by its definition in
 * the image or its scope, or in the library dlsym found it in */
static int is_code(const loader *ld, const obj *o, size_t i) {
  int type = ELF64_ST_TYPE(o->syms[i].st_info);
  if (type == STT_FUNC || type == STT_GNU_IFUNC) return 1;
  if (type != STT_NOTYPE || ELF64_ST_BIND(o->syms[i].st_info) == STB_LOCAL) return 0;
  const sym_def *d = find_def(ld->defs, ld->ndefs, sym_name(o, &o->syms[i]));
  if (!d && ld->scope) d = find_def(ld->scope->defs, ld->scope->ndefs, sym_name(o, &o->syms[i]));
  if (d) return d->type == STT_FUNC || d->type == STT_GNU_IFUNC;
  Dl_info info;
  const Elf64_Sym *found = NULL;
  if (!dladdr1((void *)o->addr[i], &info, (void **)&found, RTLD_DL_SYMENT) || !found) return 0;
  type = ELF64_ST_TYPE(found->st_info);
  return type == STT_FUNC || type == STT_GNU_IFUNC;
}

static int fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

static int relocate(loader *ld, size_t e) {
  obj *o = &ld->objs[e];
  for (size_t r = 1; r < o->nsec; r++) {
    const Elf64_Shdr *rs = &o->sh[r];
    if (rs->sh_type != SHT_RELA) continue;
    size_t target = rs->sh_info;
    if (target >= o->nsec || o->discarded[target] || o->sec_area[target] < 0) continue;
    if (rs->sh_link != o->symtab || rs->sh_entsize != sizeof(Elf64_Rela) || rs->sh_offset % 8)
      return fail(ld, "object %zu has a malformed relocation section", e);
    const Elf64_Rela *rel = (const Elf64_Rela *)(o->b + rs->sh_offset);
    size_t nrel = rs->sh_size / sizeof *rel;
    uintptr_t base = sec_addr(ld, o, target);
    uint64_t secsize = o->sh[target].sh_size;
    int nobits = o->sh[target].sh_type == SHT_NOBITS;
    for (size_t j = 0; j < nrel; j++) {
      uint32_t type = ELF64_R_TYPE(rel[j].r_info);
      size_t si = ELF64_R_SYM(rel[j].r_info);
      if (type == R_X86_64_NONE) continue;
      if (si >= o->nsyms) return fail(ld, "object %zu: a relocation names symbol %zu of %zu", e, si, o->nsyms);
      const Elf64_Sym *sym = &o->syms[si];
      size_t width = (type == R_X86_64_64 || type == R_X86_64_PC64 || type == R_X86_64_SIZE64) ? 8 : 4;
      if (nobits || rel[j].r_offset > secsize || width > secsize - rel[j].r_offset)
        return fail(ld, "object %zu: a relocation outside its section", e);
      if (si && sym->st_shndx != SHN_UNDEF && sym->st_shndx != SHN_ABS && sym->st_shndx < o->nsec &&
          !o->discarded[sym->st_shndx] && o->sec_area[sym->st_shndx] < 0)
        return fail(ld, "object %zu: code refers to a section that does not load (%s)", e, sym_name(o, sym));
      if (o->external[si] == MISSING)
        return fail(ld, "object %zu calls %s, which is not in the process", e,
                    *sym_name(o, sym) ? sym_name(o, sym) : "(a nameless symbol)");
      unsigned char *P = (unsigned char *)base + rel[j].r_offset;
      int64_t S = (int64_t)o->addr[si], A = rel[j].r_addend, p = (int64_t)(uintptr_t)P;
      int64_t v;
      switch (type) {
        case R_X86_64_64:
          v = S + A;
          memcpy(P, &v, 8);
          break;
        case R_X86_64_PC64:
          v = S + A - p;
          memcpy(P, &v, 8);
          break;
        case R_X86_64_SIZE64:
          v = (int64_t)sym->st_size + A;
          memcpy(P, &v, 8);
          break;
        case R_X86_64_PC32:
        case R_X86_64_PLT32: {
          v = S + A - p;
          if (!fits32(v)) {
            /* a call out of reach: through the jump of a slot (code only: data has no jump) */
            if (!is_code(ld, o, si))
              return fail(ld, "object %zu: %s is out of reach of a 32-bit offset", e, sym_name(o, sym));
            v = (int64_t)(uintptr_t)slot_jump(ld, slot_of(ld, o, si)) + A - p;
            if (!fits32(v)) return fail(ld, "object %zu: a jump slot out of reach", e);
          }
          int32_t w = (int32_t)v;
          memcpy(P, &w, 4);
          break;
        }
        case R_X86_64_GOTPCREL:
        case R_X86_64_GOTPCRELX:
        case R_X86_64_REX_GOTPCRELX: {
          v = (int64_t)(uintptr_t)slot_address(ld, slot_of(ld, o, si)) + A - p;
          if (!fits32(v)) return fail(ld, "object %zu: a slot out of reach", e);
          int32_t w = (int32_t)v;
          memcpy(P, &w, 4);
          break;
        }
        case R_X86_64_32:
        case R_X86_64_32S: {
          v = S + A;
          if (type == R_X86_64_32 ? (v < 0 || v > (int64_t)UINT32_MAX) : !fits32(v))
            return fail(ld, "object %zu: an absolute 32-bit address (code that is not position-independent)", e);
          uint32_t w = (uint32_t)v;
          memcpy(P, &w, 4);
          break;
        }
        case R_X86_64_SIZE32: {
          v = (int64_t)sym->st_size + A;
          uint32_t w = (uint32_t)v;
          memcpy(P, &w, 4);
          break;
        }
        default:
          return fail(ld, "object %zu: relocation type %u is not handled", e, (unsigned)type);
      }
    }
  }
  return 0;
}

static void free_loader(loader *ld) {
  for (size_t e = 0; e < ld->n; e++) {
    obj *o = &ld->objs[e];
    free(o->sec_off);
    free(o->sec_area);
    free(o->discarded);
    free(o->addr);
    free(o->external);
    free(o->slot);
  }
  free(ld->objs);
}

static void free_syms(sym_def *defs, size_t n) {
  for (size_t i = 0; i < n; i++) free(defs[i].name);
  free(defs);
}

hl_objimage *hl_objload(const unsigned char *const *objs, const size_t *sizes, size_t n, const hl_objimage *scope, char *why,
                        size_t cap) {
  loader ld;
  memset(&ld, 0, sizeof ld);
  ld.scope = scope;
  ld.why = why;
  ld.cap = cap;
  if (why && cap) why[0] = '\0';
  ld.objs = calloc(n ? n : 1, sizeof *ld.objs);
  if (!ld.objs) {
    fail(&ld, "out of memory");
    return NULL;
  }
  ld.n = n;
  int rc = n ? 0 : fail(&ld, "no objects to load");
  for (size_t e = 0; e < n && rc == 0; e++) {
    ld.objs[e].b = objs[e];
    ld.objs[e].size = sizes[e];
    rc = parse(&ld, &ld.objs[e], e);
  }
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (rc == 0) {
    /* the slots: one jump of 8 bytes (code) and one address of 8 bytes (constants) per symbol */
    ld.stub_off = align_up(ld.area_size[AREA_CODE], 16);
    ld.area_size[AREA_CODE] = ld.stub_off + 8 * ld.slots;
    ld.slot_off = align_up(ld.area_size[AREA_CONST], 8);
    ld.area_size[AREA_CONST] = ld.slot_off + 8 * ld.slots;
    size_t at = 0;
    for (int a = 0; a < NAREAS; a++) {
      ld.area_base[a] = at;
      at += align_up(ld.area_size[a], page);
    }
    ld.map_size = at ? at : page;
    void *m = mmap(NULL, ld.map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) rc = fail(&ld, "mapping %zu bytes for the code failed", ld.map_size);
    else ld.map = m;
  }
  for (size_t e = 0; e < n && rc == 0; e++) {
    const obj *o = &ld.objs[e];
    for (size_t i = 1; i < o->nsec; i++)
      if (o->sec_area[i] >= 0 && o->sh[i].sh_type == SHT_PROGBITS)
        memcpy((void *)sec_addr(&ld, o, i), o->b + o->sh[i].sh_offset, o->sh[i].sh_size);
  }
  if (rc == 0) rc = resolve(&ld);
  for (size_t e = 0; e < n && rc == 0; e++) rc = relocate(&ld, e);
  if (rc == 0) {
    /* code read and executed, constants and slots read-only, data read and written */
    int prot[NAREAS] = {PROT_READ | PROT_EXEC, PROT_READ, PROT_READ | PROT_WRITE};
    for (int a = 0; a < NAREAS && rc == 0; a++) {
      size_t len = align_up(ld.area_size[a], page);
      if (len && mprotect(ld.map + ld.area_base[a], len, prot[a]) != 0)
        rc = fail(&ld, "protecting the loaded code failed");
    }
  }
  hl_objimage *im = rc == 0 ? calloc(1, sizeof *im) : NULL;
  if (rc == 0 && !im) fail(&ld, "out of memory");
  free_loader(&ld);
  if (!im) {
    if (ld.map) munmap(ld.map, ld.map_size);
    free_syms(ld.defs, ld.ndefs);
    free_syms(ld.funcs, ld.nfuncs);
    return NULL;
  }
  im->base = ld.map;
  im->size = ld.map_size;
  im->defs = ld.defs;
  im->ndefs = ld.ndefs;
  im->funcs = ld.funcs;
  im->nfuncs = ld.nfuncs;
  return im;
}

hl_objimage *hl_objload_functions(const char *const *names, void *const *addrs, size_t n) {
  hl_objimage *im = calloc(1, sizeof *im);
  if (!im) return NULL;
  size_t cap = 0;
  for (size_t i = 0; i < n; i++) {
    if (find_def(im->defs, im->ndefs, names[i])) continue;
    sym_def *d = push(&im->defs, &im->ndefs, &cap, names[i], (uintptr_t)addrs[i]);
    if (!d) {
      hl_objload_free(im);
      return NULL;
    }
    d->type = STT_FUNC;
  }
  return im;
}

void *hl_objload_symbol(const hl_objimage *im, const char *name) {
  const sym_def *d = im ? find_def(im->defs, im->ndefs, name) : NULL;
  return d ? (void *)d->addr : NULL;
}

size_t hl_objload_bytes(const hl_objimage *im) { return im ? im->size : 0; }

void hl_objload_free(hl_objimage *im) {
  if (!im) return;
  if (im->base) munmap(im->base, im->size);
  free_syms(im->defs, im->ndefs);
  free_syms(im->funcs, im->nfuncs);
  free(im);
}

int hl_objload_perf_map(const hl_objimage *im, const char *label) {
  if (!im) return -1;
  char path[64];
  snprintf(path, sizeof path, "/tmp/perf-%ld.map", (long)getpid());
  /* (one write per line, appended: lines of processes' threads do not interleave) */
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return -1;
  int rc = 0;
  for (size_t i = 0; i < im->nfuncs && rc == 0; i++) {
    char line[1024];
    int n = snprintf(line, sizeof line, "%llx %zx %s: %s\n", (unsigned long long)im->funcs[i].addr, im->funcs[i].size,
                     label, im->funcs[i].name);
    if (n <= 0) continue;
    if ((size_t)n >= sizeof line) {   /* (a long label: cut, the line still whole) */
      n = (int)sizeof line - 1;
      line[n - 1] = '\n';
    }
    if (write(fd, line, (size_t)n) != n) rc = -1;
  }
  close(fd);
  return rc;
}
