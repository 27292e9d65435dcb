/* The on-disk store of compiled pipelines: files only. The backend writes compiled objects into
 * the store's directory and loads them; this file names, checks, renames, bounds and removes
 * them.
 *
 * An entry is a pipeline's objects (`<16 hex>.o`, backend/hl_aot.h's format) or Halide's
 * runtime's (`runtime-<16 hex>.o`), with a trailer appended (its readers ignore bytes past what
 * they know): the entry's full key, the key's length, a CRC-32 of everything before it, and a
 * magic number. A lookup verifies all of it before the entry is loaded. Entries are written to a temporary file in the directory and renamed, so readers
 * see a whole entry or none, and two processes writing the same key both succeed.
 *
 *   HALUA_CACHE_DIR      the directory; "off" disables the store. Default: $XDG_CACHE_HOME/halua,
 *                        else ~/.cache/halua. Created mode 0700; one that other users can write,
 *                        or that cannot be written, is refused with one warning (memory only).
 *   HALUA_CACHE_MAX_MB   the entries' total size, at most (default 1024): least recently used
 *                        entries go first. The runtime entry is neither counted nor evicted. */
#ifndef HL_DISK_H
#define HL_DISK_H
#include <stddef.h>
#include <stdint.h>

/* The directory in use, or NULL (off, or unusable: then warned once). */
const char *hl_disk_dir(void);

/* A fingerprint of this build of halua (the engine library's own bytes), as 16 hex digits. */
const char *hl_disk_build_id(void);

/* A 64-bit hash of n bytes (FNV-1a: the entries' names) */
uint64_t hl_disk_hash(const void *p, size_t n);

/* The entry for key, named `<prefix><16 hex>.o`, read and verified: 0 with its bytes (the
 * trailer left out; malloc'd, at least 16-byte aligned: the caller frees them) and their size, or
 * -1. A damaged or foreign entry is removed (and reported under HALUA_LOG_COMPILES). Read once:
 * the bytes checked are the bytes loaded. */
int hl_disk_read(const char *prefix, const unsigned char *key, size_t len, void **data, size_t *size);

/* A new, empty temporary file in the directory (made exclusively), its name ending in suffix;
 * -1 when there is no directory or under 64 MiB free on its disk. */
int hl_disk_temp(char *path, size_t cap, const char *suffix);

/* Makes the file at tmp (a temporary file of the directory) the entry for key: appends
 * the trailer and renames it into place; then evicts least recently used entries over the size
 * limit. tmp is gone afterwards either way. */
int hl_disk_store(const char *prefix, const unsigned char *key, size_t len, const char *tmp);

/* Blobs: compiled bytes other than pipelines (halua's Lua modules as LuaJIT bytecode), kept
 * beside the engine library in its directory's lua-bytecode/ (made mode 0700; refused, as the
 * cache directory is, when others can write it; none where the library's directory is read-only).
 * Each is a file named by letters, digits, '-', '.' and '_', with an entry's trailer (its key and
 * checksum). They are not the compile cache's: not in HALUA_CACHE_DIR, not counted, not evicted
 * (a writer keeps a bounded set of names).
 * hl_disk_blob_read: 0, with a malloc'd copy of the bytes stored for key, or -1 (no directory, no
 * file, a file for another key or a damaged one, which the next write replaces).
 * hl_disk_blob_write: stores them (a temporary file renamed into place); 0 or -1. */
int hl_disk_blob_read(const char *name, const unsigned char *key, size_t len, void **data, size_t *size);
int hl_disk_blob_write(const char *name, const unsigned char *key, size_t len, const void *data, size_t size);

/* The entries' total size in bytes (the runtime entry excluded), 0 when off. */
long long hl_disk_bytes(void);

/* Removes every entry (not the runtime). */
int hl_disk_clear(void);

#endif
