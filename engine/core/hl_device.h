/* Devices behind a C ABI. CUDA is found at run time (dlopen of the driver), so one build runs
 * with and without a GPU. Device memory and copies go through Halide's CUDA device interface, so
 * pipelines and copies share one context. Device 0 is the host; device 1 is the first GPU. */
#ifndef HL_DEVICE_H
#define HL_DEVICE_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { HL_DEVICE_CPU = 0, HL_DEVICE_CUDA = 1 };

int hl_cuda_device_count(void);   /* 0 without a driver or a GPU */
/* The memory of the first GPU in bytes; 0 without one. */
size_t hl_cuda_device_memory(void);
/* Allocate nbytes on `device`: *handle is the backend's record, *ptr the device address. */
int hl_device_alloc(int device, size_t nbytes, void **handle, uint64_t *ptr);
void hl_device_free(int device, void *handle);
/* Copy nbytes between host memory and device memory. */
int hl_device_copy_to_device(int device, uint64_t dst, const void *src, size_t nbytes);
int hl_device_copy_to_host(int device, void *dst, uint64_t src, size_t nbytes);
/* Copy the elements of the view src into the view dst, both in `device` memory, of one dtype
 * and shape, with any strides (device_ptr + offset, as hl_array views have them). */
int hl_device_copy_view(int device, uint64_t dst, const int64_t *dst_strides, uint64_t src, const int64_t *src_strides,
                        int ndim, const int64_t *shape, size_t elem_size);
/* Wait for the device's queued work (kernels run asynchronously). */
int hl_device_sync(int device);

#ifdef __cplusplus
}
/* C++ only: the device interface pipelines use, and the target for a device. */
#include <Halide.h>
const halide_device_interface_t *hl_device_interface(int device);
Halide::Target hl_device_target(int device);
/* Fill the runtime handlers every call must carry (error recording, the shared CUDA context). */
void hl_device_handlers(Halide::JITHandlers &h);
/* Bring a buffer's newest values to device memory (allocating it there if need be). A CUDA
 * extern stage needs it for inputs a host stage produced: Halide 14 copies those to the device
 * for its own GPU stages, not for extern ones. 0 on success. */
int hl_buffer_to_device(halide_buffer_t *b);
#endif
#endif
