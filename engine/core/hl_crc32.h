/* CRC-32 as zip archives use it (IEEE 802.3 polynomial, reflected, initial and final xor ~0). */
#ifndef HL_CRC32_H
#define HL_CRC32_H
#include <stddef.h>
#include <stdint.h>

/* Continue a CRC over n more bytes: crc = hl_crc32(0, NULL, 0) to start, or pass a previous result. */
uint32_t hl_crc32(uint32_t crc, const void *data, size_t n);
#endif
