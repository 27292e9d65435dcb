#define _GNU_SOURCE   /* dladdr */
#include "hl_disk.h"
#include <zlib.h>
#include "hl_notice.h"
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

enum { TRAILER = 16 };                     /* key length (8), CRC-32 (4), magic (4) */
static const uint32_t MAGIC = 0x31434c48;  /* "HLC1" */
static char dir[4096];
static const char *dir_in_use;             /* dir, or NULL */
static pthread_once_t dir_once = PTHREAD_ONCE_INIT;

static void warn(const char *why) {
  fprintf(stderr, "halua: warning: %s; compiled pipelines are cached in memory only\n", why);
}

/* mkdir -p, each new level mode 0700 */
static int make_dirs(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    int rc = mkdir(path, 0700);
    *p = '/';
    if (rc && errno != EEXIST) return -1;
  }
  return mkdir(path, 0700) && errno != EEXIST ? -1 : 0;
}

static void choose_dir(void) {
  const char *env = getenv("HALUA_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (env && strcmp(env, "off") == 0) return;
  int n;
  if (env && *env) n = snprintf(dir, sizeof dir, "%s", env);
  else if (xdg && *xdg) n = snprintf(dir, sizeof dir, "%s/halua", xdg);
  else if (home && *home) n = snprintf(dir, sizeof dir, "%s/.cache/halua", home);
  else {
    warn("no cache directory (HALUA_CACHE_DIR, XDG_CACHE_HOME and HOME are unset)");
    return;
  }
  char why[4300];
  if (n <= 0 || n >= (int)sizeof dir - 64) {
    warn("the cache directory's path is too long");
    return;
  }
  while (n > 1 && dir[n - 1] == '/') dir[--n] = 0;
  struct stat st;
  if (make_dirs(dir) || stat(dir, &st) || !S_ISDIR(st.st_mode)) {
    snprintf(why, sizeof why, "cannot use the cache directory %s (%s)", dir, strerror(errno ? errno : ENOTDIR));
    warn(why);
    return;
  }
  /* it holds code that is run: refuse a directory someone else could write into */
  if (st.st_uid != geteuid() || (st.st_mode & 022)) {
    snprintf(why, sizeof why, "the cache directory %s is writable by other users or not owned by this user", dir);
    warn(why);
    return;
  }
  char probe[4200];
  snprintf(probe, sizeof probe, "%s/.probe-XXXXXX", dir);
  int fd = mkstemp(probe);
  if (fd < 0) {
    snprintf(why, sizeof why, "cannot write to the cache directory %s (%s)", dir, strerror(errno));
    warn(why);
    return;
  }
  close(fd);
  unlink(probe);
  dir_in_use = dir;
}

const char *hl_disk_dir(void) {
  pthread_once(&dir_once, choose_dir);
  return dir_in_use;
}

static uint64_t fnv1a(const unsigned char *p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

uint64_t hl_disk_hash(const void *p, size_t n) { return fnv1a(p, n, 0xcbf29ce484222325ull); }

static char build_id[17];
static pthread_once_t build_once = PTHREAD_ONCE_INIT;

/* The linker's build id of the library that holds this code (a hash of its contents, which
 * any rebuild changes), or else a hash of the library file's bytes. */
typedef struct { uintptr_t addr; uint64_t h; int found; } note_search;

static int find_build_id(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  note_search *s = data;
  int mine = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && s->addr >= lo && s->addr < lo + ph->p_memsz) mine = 1;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    while (p + 12 <= end) {
      uint32_t namesz, descsz, type;
      memcpy(&namesz, p, 4);
      memcpy(&descsz, p + 4, 4);
      memcpy(&type, p + 8, 4);
      const unsigned char *name = p + 12, *desc = name + ((namesz + 3) & ~3u);
      if (desc + descsz > end) break;
      if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        s->h = fnv1a(desc, descsz, s->h);
        s->found = 1;
        return 1;
      }
      p = desc + ((descsz + 3) & ~3u);
    }
  }
  return 1;
}

static void compute_build_id(void) {
  note_search s = {(uintptr_t)&hl_disk_build_id, 0xcbf29ce484222325ull, 0};
  dl_iterate_phdr(find_build_id, &s);
  Dl_info info;
  if (!s.found && dladdr((void *)&hl_disk_build_id, &info) && info.dli_fname) {
    int fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
      void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (m != MAP_FAILED) {
        s.h = fnv1a(m, (size_t)st.st_size, s.h);
        munmap(m, (size_t)st.st_size);
      }
    }
    if (fd >= 0) close(fd);
  }
  snprintf(build_id, sizeof build_id, "%016llx", (unsigned long long)s.h);
}

const char *hl_disk_build_id(void) {
  pthread_once(&build_once, compute_build_id);
  return build_id;
}

/* an entry's file: `<prefix><16 hex>.o`, compiled objects (backend/hl_aot.h's format) */
static void entry_path(char *path, size_t cap, const char *prefix, const unsigned char *key, size_t len) {
  snprintf(path, cap, "%s/%s%016llx.o", dir_in_use, prefix, (unsigned long long)fnv1a(key, len, 0xcbf29ce484222325ull));
}

/* 16 lowercase hex digits at p (an entry's hash) */
static int hex16(const char *p) {
  for (int i = 0; i < 16; i++)
    if (!p[i] || !strchr("0123456789abcdef", p[i])) return 0;
  return 1;
}

/* Halide's runtime as a shared object of an earlier build (`runtime-<16 hex>.so`): never loaded
 * now, removed with stale temporary files */
static int is_old_runtime(const char *name) {
  return strlen(name) == 27 && strncmp(name, "runtime-", 8) == 0 && hex16(name + 8) && strcmp(name + 24, ".so") == 0;
}

/* why the file's bytes are not the entry for key, or NULL */
static const char *check(const unsigned char *b, size_t size, const unsigned char *key, size_t len) {
  if (size < TRAILER + len) return "truncated";
  uint64_t klen;
  uint32_t crc, magic;
  memcpy(&klen, b + size - 16, 8);
  memcpy(&crc, b + size - 8, 4);
  memcpy(&magic, b + size - 4, 4);
  if (magic != MAGIC) return "no trailer: truncated or overwritten";
  if (klen > size - TRAILER) return "a corrupt trailer";
  if ((uint32_t)crc32_z(0, (const Bytef *)b, size - 8) != crc) return "checksum mismatch";
  if (klen != len || memcmp(b + size - TRAILER - klen, key, len) != 0) return "another pipeline's key";
  return NULL;
}

static int read_all(int fd, void *p, size_t n) {
  char *c = p;
  while (n > 0) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    c += r;
    n -= (size_t)r;
  }
  return 0;
}

/* The bytes before the trailer of the file open at fd, when it is a regular file of this user
 * holding the entry for key: 0, with *data (malloc'd: its caller's) and *size; else -1 and why. */
static int read_checked(int fd, const unsigned char *key, size_t len, void **data, size_t *size, const char **why) {
  *data = NULL;
  *size = 0;
  struct stat st = {0};
  *why = "unreadable";
  if (fstat(fd, &st) != 0) return -1;
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
    *why = "not a regular file of this user";
    return -1;
  }
  if (st.st_size == 0) {
    *why = "empty";
    return -1;
  }
  if (st.st_size < 0 || st.st_size >= (1 << 30)) return -1;
  unsigned char *b = malloc((size_t)st.st_size);
  if (!b || read_all(fd, b, (size_t)st.st_size)) {
    free(b);
    return -1;
  }
  *why = check(b, (size_t)st.st_size, key, len);
  if (*why) {
    free(b);
    return -1;
  }
  *data = b;
  *size = (size_t)st.st_size - TRAILER - len;
  return 0;
}

int hl_disk_read(const char *prefix, const unsigned char *key, size_t len, void **data, size_t *size) {
  *data = NULL;
  *size = 0;
  if (!hl_disk_dir()) return -1;
  char file[4200];
  entry_path(file, sizeof file, prefix, key, len);
  /* (no following a planted link, no blocking on a planted pipe) */
  int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return -1;
  const char *why;
  if (read_checked(fd, key, len, data, size, &why)) {
    close(fd);
    unlink(file);
    if (hl_log_compiles()) fprintf(stderr, "halua: disk cache: removed a damaged entry (%s): %s\n", why, file);
    return -1;
  }
  futimens(fd, NULL);   /* used now: least recently used entries are evicted first */
  close(fd);
  return 0;
}

int hl_disk_temp(char *path, size_t cap, const char *suffix) {
  if (!hl_disk_dir()) return -1;
  /* about to write a compiled object: LLVM ends the process on a failed write, so a nearly full
   * disk keeps pipelines in memory instead */
  struct statvfs fs;
  if (statvfs(dir_in_use, &fs) == 0 && (double)fs.f_bavail * fs.f_frsize < 64.0 * 1048576) return -1;
  /* created here, exclusively, with random letters: processes of the same pid (containers
   * sharing a volume) never write into one file */
  int w = snprintf(path, cap, "%s/.tmp-%ld-XXXXXX%s", dir_in_use, (long)getpid(), suffix);
  if (w <= 0 || (size_t)w >= cap) return -1;
  int fd = mkstemps(path, (int)strlen(suffix));
  if (fd < 0) return -1;
  close(fd);
  return 0;
}

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static double limit_bytes(void) {
  const char *s = getenv("HALUA_CACHE_MAX_MB");
  char *end = NULL;
  double mb = s && *s ? strtod(s, &end) : 1024;
  if (s && *s && (end == s || *end || mb < 0)) {
    static int warned;
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
      fprintf(stderr, "halua: warning: HALUA_CACHE_MAX_MB=%s is not a size in megabytes; using 1024\n", s);
    mb = 1024;
  }
  return mb * 1048576.0;
}

/* a pipeline entry's file name: 16 hex digits and ".o", or ".so" (a shared object of an earlier
 * build, never found again: counted and evicted like the rest until it goes) */
static int is_entry(const char *name) {
  size_t n = strlen(name);
  return hex16(name) && ((n == 18 && strcmp(name + 16, ".o") == 0) || (n == 19 && strcmp(name + 16, ".so") == 0));
}

typedef struct { char name[20]; time_t mtime; long mtime_ns; long long size; } file_info;

static int by_age(const void *a, const void *b) {
  const file_info *x = a, *y = b;
  if (x->mtime != y->mtime) return x->mtime < y->mtime ? -1 : 1;
  return (x->mtime_ns > y->mtime_ns) - (x->mtime_ns < y->mtime_ns);
}

/* the entries (and, with `stale`, temporary files over an hour old, left by a killed process) */
static long long scan(file_info **out, int *count, int remove_stale) {
  *out = NULL;
  *count = 0;
  DIR *d = opendir(dir_in_use);
  if (!d) return 0;
  long long total = 0;
  int cap = 0;
  struct dirent *e;
  char path[4400];
  time_t now = time(NULL);
  while ((e = readdir(d))) {
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir_in_use, e->d_name);
    if (remove_stale && ((strncmp(e->d_name, ".tmp-", 5) == 0 && stat(path, &st) == 0 && now - st.st_mtime > 3600) ||
                         is_old_runtime(e->d_name))) {
      unlink(path);
      continue;
    }
    if (!is_entry(e->d_name) || stat(path, &st) != 0) continue;
    total += st.st_size;
    if (*count == cap) {
      cap = cap ? 2 * cap : 64;
      file_info *grown = realloc(*out, (size_t)cap * sizeof **out);
      if (!grown) break;
      *out = grown;
    }
    file_info *f = &(*out)[(*count)++];
    memcpy(f->name, e->d_name, 20);
    f->mtime = st.st_mtim.tv_sec;
    f->mtime_ns = st.st_mtim.tv_nsec;
    f->size = st.st_size;
  }
  closedir(d);
  return total;
}

/* The entries' bytes, kept in the directory's file `usage` (a decimal number and a newline) by
 * every process that stores, under an exclusive flock. A scan stats every entry (a full cache of
 * 1 GiB holds some 50,000: 0.1-0.3 s, more than a small pipeline's compile), so it runs only where
 * that file is missing or unreadable, or where the total would pass the limit; an eviction goes
 * down to 7/8 of the limit, so that the next one is far off. Entries removed by hand, or one
 * entry stored by two processes at once, leave the total too high (a scan comes sooner, and sets
 * it right); entries written by a halua that did not keep the file are counted at the next scan. */
static void evict(long long added) {
  double limit = limit_bytes();
  char path[4400];
  snprintf(path, sizeof path, "%s/usage", dir_in_use);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0 && flock(fd, LOCK_EX) != 0) {
    close(fd);
    fd = -1;
  }
  long long total = -1;
  char text[32];
  ssize_t got = fd >= 0 ? pread(fd, text, sizeof text - 1, 0) : -1;
  if (got > 0) {
    text[got] = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (end != text && *end == '\n' && v >= 0) total = v;
  }
  if (total >= 0 && total + added <= limit) {
    total += added;
  } else {
    file_info *files;
    int n;
    total = scan(&files, &n, 1);
    if (total > limit) {
      qsort(files, (size_t)n, sizeof *files, by_age);
      for (int i = 0; i < n && total > limit * 7 / 8; i++) {
        snprintf(path, sizeof path, "%s/%s", dir_in_use, files[i].name);
        if (unlink(path) == 0) total -= files[i].size;
      }
    }
    free(files);
  }
  if (fd < 0) return;
  int len = snprintf(text, sizeof text, "%lld\n", total);
  if (pwrite(fd, text, (size_t)len, 0) == len && ftruncate(fd, len) == 0) {
    /* (a failed write leaves a number the next reader refuses: it scans) */
  }
  close(fd);   /* (and the lock with it) */
}

int hl_disk_store(const char *prefix, const unsigned char *key, size_t len, const char *tmp) {
  int rc = -1;
  long long added = 0;   /* the entry's bytes */
  int fd = hl_disk_dir() ? open(tmp, O_RDWR | O_CLOEXEC) : -1;
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) {
      uint64_t klen = len;
      uint32_t crc = (uint32_t)crc32_z(0, (const Bytef *)m, (size_t)st.st_size);
      munmap(m, (size_t)st.st_size);
      crc = (uint32_t)crc32_z(crc, (const Bytef *)key, len);
      crc = (uint32_t)crc32_z(crc, (const Bytef *)&klen, 8);
      if (lseek(fd, 0, SEEK_END) >= 0 && !write_all(fd, key, len) && !write_all(fd, &klen, 8) &&
          !write_all(fd, &crc, 4) && !write_all(fd, &MAGIC, 4)) {
        char file[4200];
        entry_path(file, sizeof file, prefix, key, len);
        rc = rename(tmp, file);
        added = (long long)st.st_size + (long long)len + TRAILER;
      }
    }
  }
  if (fd >= 0) close(fd);
  if (rc) unlink(tmp);
  else if (!*prefix) evict(added);
  return rc;
}

/* ---- blobs: named files of compiled bytes other than pipelines, beside the library (hl_disk.h) ---- */

static char blob_dir[4200];
static const char *blob_dir_in_use;   /* blob_dir, or NULL */
static pthread_once_t blob_once = PTHREAD_ONCE_INIT;

static void choose_blob_dir(void) {
  Dl_info info;   /* (where this code was loaded from) */
  if (!dladdr((void *)&choose_blob_dir, &info) || !info.dli_fname) return;
  const char *slash = strrchr(info.dli_fname, '/');
  if (!slash) return;   /* (a bare name says nothing of where the library is: never the working directory) */
  int n = snprintf(blob_dir, sizeof blob_dir, "%.*s/lua-bytecode", (int)(slash - info.dli_fname), info.dli_fname);
  if (n <= 0 || n >= (int)sizeof blob_dir - 256) return;
  struct stat st;
  if (mkdir(blob_dir, 0700) && errno != EEXIST) return;   /* (a library installed read-only: none) */
  /* what it holds is run: as for the cache directory, only one of this user's that no one else writes */
  if (stat(blob_dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) || access(blob_dir, W_OK))
    return;
  blob_dir_in_use = blob_dir;
}

static int blob_path(char *path, size_t cap, const char *name) {
  pthread_once(&blob_once, choose_blob_dir);
  if (!blob_dir_in_use || !name[0] || name[0] == '.' || strlen(name) > 200) return -1;
  for (const char *c = name; *c; c++)
    if (!isalnum((unsigned char)*c) && !strchr("-._", *c)) return -1;
  return snprintf(path, cap, "%s/%s", blob_dir_in_use, name) < (int)cap ? 0 : -1;
}


int hl_disk_blob_read(const char *name, const unsigned char *key, size_t len, void **data, size_t *size) {
  *data = NULL;
  *size = 0;
  char path[4400];
  if (blob_path(path, sizeof path, name)) return -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return -1;
  const char *why;
  int rc = read_checked(fd, key, len, data, size, &why);
  close(fd);
  return rc;
}

int hl_disk_blob_write(const char *name, const unsigned char *key, size_t len, const void *data, size_t size) {
  char path[4400], tmp[4400];
  if (blob_path(path, sizeof path, name) || snprintf(tmp, sizeof tmp, "%s.tmp-%ld-XXXXXX", path, (long)getpid()) >= (int)sizeof tmp)
    return -1;
  int fd = mkstemp(tmp);   /* (in the same directory: the rename is atomic; readers see a whole blob or the old one) */
  if (fd < 0) return -1;
  uint64_t klen = len;
  uint32_t crc = (uint32_t)crc32_z(0, (const Bytef *)data, size);
  crc = (uint32_t)crc32_z(crc, (const Bytef *)key, len);
  crc = (uint32_t)crc32_z(crc, (const Bytef *)&klen, 8);
  int rc = !write_all(fd, data, size) && !write_all(fd, key, len) && !write_all(fd, &klen, 8) && !write_all(fd, &crc, 4) &&
                   !write_all(fd, &MAGIC, 4)
               ? 0
               : -1;
  if (close(fd)) rc = -1;
  if (!rc) rc = rename(tmp, path);
  if (rc) unlink(tmp);
  return rc;
}

long long hl_disk_bytes(void) {
  if (!hl_disk_dir()) return 0;
  file_info *files;
  int n;
  long long total = scan(&files, &n, 0);
  free(files);
  return total;
}

int hl_disk_clear(void) {
  if (!hl_disk_dir()) return 0;
  file_info *files;
  int n;
  scan(&files, &n, 1);
  char path[4400];
  int rc = 0;
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s", dir_in_use, files[i].name);
    if (unlink(path) && errno != ENOENT) rc = -1;
  }
  free(files);
  snprintf(path, sizeof path, "%s/usage", dir_in_use);
  unlink(path);   /* (the next store counts the entries again) */
  return rc;
}
