#include "hl_stream.h"
#include "hl_error.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int64_t file_read(hl_source *s, void *dst, size_t n) {
  hl_file_source *fs = (hl_file_source *)s;
  size_t got = fread(dst, 1, n, fs->f);
  if (got < n && ferror(fs->f)) return hl_error("%s: read error: %s", fs->what, strerror(errno));
  return (int64_t)got;
}

static int64_t file_remaining(hl_source *s) {
  hl_file_source *fs = (hl_file_source *)s;
  struct stat st;
  off_t pos = ftello(fs->f);
  if (pos < 0 || fstat(fileno(fs->f), &st) || !S_ISREG(st.st_mode)) return -1;
  return st.st_size > pos ? (int64_t)st.st_size - pos : 0;
}

static int file_write(hl_sink *s, const void *src, size_t n) {
  hl_file_sink *fs = (hl_file_sink *)s;
  if (n && fwrite(src, 1, n, fs->f) != n) return hl_error("%s: write error: %s", fs->what, strerror(errno));
  return 0;
}

void hl_file_source_init(hl_file_source *s, FILE *f, const char *what) {
  s->base.read = file_read;
  s->base.remaining = file_remaining;
  s->f = f;
  s->what = what;
}

void hl_file_sink_init(hl_file_sink *s, FILE *f, const char *what) {
  s->base.write = file_write;
  s->f = f;
  s->what = what;
}

int hl_open_read(const char *op, const char *path, FILE **out) {
  FILE *f = fopen(path, "rb");
  if (!f) return hl_error("%s: cannot open %s: %s", op, path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    return hl_error("%s: cannot open %s: %s", op, path, strerror(EISDIR));
  }
  *out = f;
  return 0;
}

int hl_replace_open(hl_replace_file *r, const char *op, const char *path) {
  static unsigned long serial;
  memset(r, 0, sizeof r->tmp);
  r->f = NULL;
  r->path = path;
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return hl_error("%s: cannot open %s: %s", op, path, strerror(EISDIR));
  for (int attempt = 0; attempt < 100; attempt++) {
    unsigned long n = __atomic_fetch_add(&serial, 1, __ATOMIC_RELAXED);
    if (snprintf(r->tmp, sizeof r->tmp, "%s.tmp-%ld-%lu", path, (long)getpid(), n) >= (int)sizeof r->tmp)
      return hl_error("%s: cannot open %s: %s", op, path, strerror(ENAMETOOLONG));
    /* mode 0666 less the umask, as fopen would create the file itself */
    int fd = open(r->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return hl_error("%s: cannot open %s: %s", op, path, strerror(errno));
    /* Locked until it is renamed or removed (the kernel drops the lock when the process ends,
     * however it ends): a later save removes a temporary file only when it can take this lock
     * (remove_stale). Taken, it is ours; held by another, that save is removing the name, and
     * after it did (no link left) the file is no one's: either way, another name. A file system
     * without locks leaves the file unlocked, and there no save removes any. */
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK) {
      struct stat own;
      if (fstat(fd, &own) || own.st_nlink > 0) {
        r->f = fdopen(fd, "wb");
        if (!r->f) {
          int e = errno;
          close(fd);
          unlink(r->tmp);
          return hl_error("%s: cannot open %s: %s", op, path, strerror(e));
        }
        return 0;
      }
    }
    close(fd);
  }
  return hl_error("%s: cannot open %s: no free temporary name beside it", op, path);
}

/* The temporary files of saves to `path` whose process has ended (killed part way, or its
 * machine lost power): path.tmp-PID-N, PID not a process here and its lock free. One whose
 * process still runs (or runs on another machine sharing the directory) holds the lock, or its
 * PID is alive: it stays. Nothing else in the directory is looked at; failures are ignored. */
static void remove_stale(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  char dir[4200];
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == path) snprintf(dir, sizeof dir, "/");
  else if ((size_t)(slash - path) < sizeof dir) snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  else return;
  DIR *d = opendir(dir);
  if (!d) return;
  size_t blen = strlen(base);
  long me = (long)getpid();
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *name = e->d_name, *p = name + blen + 5;
    if (strncmp(name, base, blen) || strncmp(name + blen, ".tmp-", 5) || !isdigit((unsigned char)*p)) continue;
    char *end;
    errno = 0;
    long pid = strtol(p, &end, 10);
    if (errno || pid <= 0 || pid == me || *end != '-' || !isdigit((unsigned char)end[1])) continue;
    strtoul(end + 1, &end, 10);
    if (*end) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;   /* its process may still be writing it */
    int fd = openat(dirfd(d), name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0) unlinkat(dirfd(d), name, 0);
    close(fd);   /* (and the lock with it) */
  }
  closedir(d);
}

int hl_replace_commit(hl_replace_file *r, const char *what) {
  int rc = 0;
  if (fflush(r->f) || fsync(fileno(r->f))) rc = hl_error("%s: write error: %s", what, strerror(errno));
  int lock = dup(fileno(r->f));   /* keeps the lock (it belongs to the open file) until the rename */
  if (fclose(r->f) && !rc) rc = hl_error("%s: write error: %s", what, strerror(errno));
  r->f = NULL;
  if (!rc && rename(r->tmp, r->path)) rc = hl_error("%s: cannot replace the file: %s", what, strerror(errno));
  if (rc) unlink(r->tmp);
  if (lock >= 0) close(lock);
  if (!rc) remove_stale(r->path);
  return rc;
}

void hl_replace_abort(hl_replace_file *r) {
  if (r->f) fclose(r->f);
  r->f = NULL;
  unlink(r->tmp);
}
