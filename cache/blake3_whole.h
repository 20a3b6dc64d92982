/* Vantage cache: standard BLAKE3-256 of a whole buffer at once (cache/blake3_whole.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The BLAKE3 hash (32 bytes) of `len` bytes at `in`: the same as blake3_hasher_update with the
   whole input, faster on sizes that are not a multiple of 16 KiB. */
void vantage_blake3_whole(const uint8_t* in, size_t len, uint8_t out[32]);

#ifdef __cplusplus
}
#endif
