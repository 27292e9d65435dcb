/* Errors: core functions return a failure value (NULL or -1) after recording a message here.
 * Nothing in the core longjmps, so a host (or the Lua layer) decides how to raise it.
 * The message is per thread. An optional hook sees every message as it is recorded. */
#ifndef HL_ERROR_H
#define HL_ERROR_H

#if defined(__GNUC__)
#define HL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HL_PRINTF(a, b)
#endif

/* Record "halua: <formatted>" as the current error; always returns -1 for `return hl_error(..)` */
int hl_error(const char *fmt, ...) HL_PRINTF(1, 2);
const char *hl_error_message(void);
void hl_error_clear(void);
typedef void (*hl_error_hook)(const char *message);
void hl_error_set_hook(hl_error_hook hook);

/* Write a shape as "[2,3]" into buf (always terminated). */
struct hl_shape_fmt { char s[160]; };
struct hl_shape_fmt hl_shape_str(int ndim, const long long *shape);
#endif
