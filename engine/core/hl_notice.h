/* Progress notices for long work: a line on stderr when something (a pipeline compile) is still
 * running after a delay, and a closing line with its time; nothing at all for quick work.
 * HALUA_QUIET=1 silences them (hosts that own stderr). */
#ifndef HL_NOTICE_H
#define HL_NOTICE_H

typedef struct hl_notice hl_notice;

/* Starts a watcher that prints "halua: <what>..." if hl_notice_end is not called within
 * after_ms. Returns NULL (and prints nothing ever) when quiet or if no thread can be started. */
hl_notice *hl_notice_begin(int after_ms, const char *what);
/* Ends the watch; when the notice was printed, prints "halua: <what>: done in X s". */
void hl_notice_end(hl_notice *n);

/* Whether HALUA_LOG_COMPILES asks for a line per compile, disk cache load and damaged entry
 * (read once). */
int hl_log_compiles(void);

#endif
