/* Thread-locals on hot paths. */
#ifndef HL_TLS_H
#define HL_TLS_H

/* Keeps the address of a thread-local, taken into the pointer variable p, in a register for the
 * rest of the function. In a shared library each such address is a call to __tls_get_addr, and
 * GCC makes that call again after every call the function makes rather than keep the result
 * (it counts the address as cheap to recompute); an empty asm that may change p makes the value
 * one it must keep. */
#define HL_TLS_KEEP(p) __asm__("" : "+r"(p))

#endif
